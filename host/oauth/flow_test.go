package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// resource is an MCP-like endpoint at /mcp protected by an oauthtest
// server; it answers with the user its token was issued to.
type resource struct {
	as  *oauthtest.Server
	srv *httptest.Server
	url string
}

func newResource(t *testing.T, opts oauthtest.Options) *resource {
	t.Helper()
	r := &resource{as: oauthtest.New(opts)}
	t.Cleanup(r.as.Close)
	inner := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "user=%s", req.Header.Get(oauthtest.UserHeader))
	})
	r.srv = httptest.NewServer(r.as.Protect(func() string { return r.url }, inner))
	t.Cleanup(r.srv.Close)
	r.url = r.srv.URL + "/mcp"
	return r
}

func get(ctx context.Context, rt http.RoundTripper, u string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(`{"jsonrpc":"2.0"}`))
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b), nil
}

// loginHook is an Authorize hook that logs in through the test browser.
func loginHook(c *oauth.Client, user string, calls *atomic.Int32) func(context.Context, *oauth.AuthorizationRequiredError) error {
	return func(ctx context.Context, req *oauth.AuthorizationRequiredError) error {
		if calls != nil {
			calls.Add(1)
		}
		return c.Login(ctx, oauth.LoginOptions{Subject: req.Subject, Scopes: req.Scopes, Open: oauthtest.Browser(user)})
	}
}

func TestAuthorizationCodeFlow(t *testing.T) {
	tests := []struct {
		name       string
		asOpts     oauthtest.Options
		cfg        func(r *resource) oauth.Config
		wantMethod string
		wantReg    int
	}{
		{"dynamic registration, public client", oauthtest.Options{}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url}
		}, oauth.AuthNone, 1},
		{"dynamic registration, confidential client", oauthtest.Options{AuthMethods: []string{"client_secret_post"}}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url}
		}, oauth.AuthClientSecretPost, 1},
		{"pre-registered, basic", oauthtest.Options{Clients: map[string]string{"pre": "s3cret"}}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url, ClientID: "pre", ClientSecret: "s3cret"}
		}, oauth.AuthClientSecretBasic, 0},
		{"pre-registered, post", oauthtest.Options{Clients: map[string]string{"pre": "s3cret"}, AuthMethods: []string{"client_secret_post"}}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url, ClientID: "pre", ClientSecret: "s3cret"}
		}, oauth.AuthClientSecretPost, 0},
		{"pre-registered, public", oauthtest.Options{Clients: map[string]string{"pub": ""}}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url, ClientID: "pub"}
		}, oauth.AuthNone, 0},
		{"iss parameter", oauthtest.Options{IssParameter: true}, func(r *resource) oauth.Config {
			return oauth.Config{ServerURL: r.url}
		}, oauth.AuthNone, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResource(t, tt.asOpts)
			store := oauth.NewMemoryStore()
			cfg := tt.cfg(r)
			cfg.Store = store
			c, err := oauth.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var logins atomic.Int32
			rt := c.Transport(nil, oauth.TransportOptions{Subject: "alice", Authorize: loginHook(c, "alice", &logins)})
			got, err := get(context.Background(), rt, r.url)
			if err != nil || got != "user=alice" {
				t.Fatalf("request = %q, %v", got, err)
			}
			// A second request reuses the stored token.
			if got, err := get(context.Background(), rt, r.url); err != nil || got != "user=alice" {
				t.Fatalf("second request = %q, %v", got, err)
			}
			if logins.Load() != 1 || r.as.Requests("token:authorization_code") != 1 || r.as.Requests("register") != tt.wantReg {
				t.Errorf("logins %d, code exchanges %d, registrations %d", logins.Load(), r.as.Requests("token:authorization_code"), r.as.Requests("register"))
			}
			entries, _ := store.List(context.Background())
			if len(entries) != 1 || entries[0].Key.Subject != "alice" || entries[0].Key.Issuer != r.as.URL() || entries[0].Token.AuthMethod != tt.wantMethod {
				t.Fatalf("stored %+v", entries)
			}
		})
	}
}

// A token that the server stops accepting is refreshed (rotation: the new
// refresh token replaces the old one) without a new login.
func TestRefreshWithRotation(t *testing.T) {
	r := newResource(t, oauthtest.Options{})
	store := oauth.NewMemoryStore()
	c, _ := oauth.NewClient(oauth.Config{ServerURL: r.url, Store: store})
	var logins atomic.Int32
	rt := c.Transport(nil, oauth.TransportOptions{Subject: "bob", Authorize: loginHook(c, "bob", &logins)})
	if _, err := get(context.Background(), rt, r.url); err != nil {
		t.Fatal(err)
	}
	first, _, _ := store.Get(context.Background(), oauth.Key{Subject: "bob", Resource: c.Resource()})
	r.as.Revoke("bob")
	if got, err := get(context.Background(), rt, r.url); err != nil || got != "user=bob" {
		t.Fatalf("after revocation: %q, %v", got, err)
	}
	second, _, _ := store.Get(context.Background(), oauth.Key{Subject: "bob", Resource: c.Resource()})
	if logins.Load() != 1 || r.as.Requests("token:refresh_token") != 1 {
		t.Fatalf("logins %d, refreshes %d", logins.Load(), r.as.Requests("token:refresh_token"))
	}
	if second.RefreshToken == first.RefreshToken || second.AccessToken == first.AccessToken {
		t.Fatal("the rotated refresh token was not stored")
	}
	// An expired token is refreshed before it is sent.
	r.as.Revoke("bob")
	second.Expiry = time.Now().Add(-time.Minute)
	_ = store.Put(context.Background(), oauth.Key{Subject: "bob", Resource: c.Resource(), Issuer: r.as.URL()}, second)
	if _, err := get(context.Background(), rt, r.url); err != nil {
		t.Fatal(err)
	}
	if r.as.Requests("token:refresh_token") != 2 || logins.Load() != 1 {
		t.Fatalf("refreshes %d, logins %d", r.as.Requests("token:refresh_token"), logins.Load())
	}
}

func TestAuthorizationRequiredWithoutHook(t *testing.T) {
	r := newResource(t, oauthtest.Options{})
	c, _ := oauth.NewClient(oauth.Config{ServerURL: r.url})
	_, err := get(context.Background(), c.Transport(nil, oauth.TransportOptions{Subject: "carol"}), r.url)
	var are *oauth.AuthorizationRequiredError
	if !errors.As(err, &are) || !errors.Is(err, oauth.ErrAuthorizationRequired) || are.Subject != "carol" || are.AuthURL != "" {
		t.Fatalf("err = %v", err)
	}
	// With a redirect URI the error carries the URL to send the user to.
	_, err = get(context.Background(), c.Transport(nil, oauth.TransportOptions{Subject: "carol", RedirectURI: "http://127.0.0.1:9/cb"}), r.url)
	if !errors.As(err, &are) || !strings.HasPrefix(are.AuthURL, r.as.URL()+"/authorize?") || !strings.Contains(are.AuthURL, "code_challenge_method=S256") {
		t.Fatalf("err = %v (url %q)", err, are.AuthURL)
	}
}

// A 403 insufficient_scope makes the client log in again with the union of
// the granted scopes and the challenge's; a server that keeps refusing
// stops the client after MaxAttempts.
func TestStepUp(t *testing.T) {
	r := newResource(t, oauthtest.Options{RequiredScopes: []string{"read", "write"}, ScopesSupported: []string{"read"}})
	c, _ := oauth.NewClient(oauth.Config{ServerURL: r.url})
	var logins atomic.Int32
	var scopes [][]string
	rt := c.Transport(nil, oauth.TransportOptions{Subject: "dan", Authorize: func(ctx context.Context, req *oauth.AuthorizationRequiredError) error {
		scopes = append(scopes, req.Scopes)
		return loginHook(c, "dan", &logins)(ctx, req)
	}})
	if got, err := get(context.Background(), rt, r.url); err != nil || got != "user=dan" {
		t.Fatalf("request = %q, %v", got, err)
	}
	if fmt.Sprint(scopes) != "[[read] [read write]]" {
		t.Fatalf("scopes requested: %v", scopes)
	}

	stuck := newResource(t, oauthtest.Options{RequiredScopes: []string{"never-granted"}, WithheldScopes: []string{"never-granted"}})
	c2, _ := oauth.NewClient(oauth.Config{ServerURL: stuck.url, MaxAttempts: 2})
	var n atomic.Int32
	rt2 := c2.Transport(nil, oauth.TransportOptions{Authorize: func(ctx context.Context, req *oauth.AuthorizationRequiredError) error {
		return loginHook(c2, "eve", &n)(ctx, req)
	}})
	_, err := get(context.Background(), rt2, stuck.url)
	if !errors.Is(err, oauth.ErrTooManyAttempts) || n.Load() != 2 {
		t.Fatalf("err = %v after %d logins", err, n.Load())
	}
}

// The token goes only to the server's origin: a redirect to another host
// (or another port) gets no Authorization header, even though the
// Transport sits below http.Client's redirect handling.
func TestTokenStaysOnTheServersOrigin(t *testing.T) {
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		fmt.Fprint(w, "elsewhere")
	}))
	defer elsewhere.Close()
	r := newResource(t, oauthtest.Options{})
	c, _ := oauth.NewClient(oauth.Config{ServerURL: r.url})
	rt := c.Transport(nil, oauth.TransportOptions{Subject: "u", Authorize: loginHook(c, "u", nil)})
	if _, err := get(context.Background(), rt, r.url); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, elsewhere.URL+"/x", nil)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if v, _ := leaked.Load().(string); v != "" {
		t.Fatalf("the other origin received Authorization %q", v)
	}
}

// A refused refresh token (invalid_grant) is deleted and the subject logs
// in again.
func TestRefusedRefreshLogsInAgain(t *testing.T) {
	r := newResource(t, oauthtest.Options{})
	store := oauth.NewMemoryStore()
	c, _ := oauth.NewClient(oauth.Config{ServerURL: r.url, Store: store})
	var logins atomic.Int32
	rt := c.Transport(nil, oauth.TransportOptions{Subject: "fay", Authorize: loginHook(c, "fay", &logins)})
	if _, err := get(context.Background(), rt, r.url); err != nil {
		t.Fatal(err)
	}
	r.as.RevokeAll("fay")
	if got, err := get(context.Background(), rt, r.url); err != nil || got != "user=fay" {
		t.Fatalf("after revoking everything: %q, %v", got, err)
	}
	if logins.Load() != 2 || r.as.Requests("token:refresh_token") != 1 {
		t.Fatalf("logins %d, refresh attempts %d", logins.Load(), r.as.Requests("token:refresh_token"))
	}
	if entries, _ := store.List(context.Background()); len(entries) != 1 {
		t.Fatalf("%d tokens stored", len(entries))
	}
}

// staleStore answers its first reads with an old token, as a second
// process that read the shared token file before the first one refreshed.
type staleStore struct {
	oauth.TokenStore
	stale *oauth.Token
	key   oauth.Key
	reads int
}

func (s *staleStore) Get(ctx context.Context, key oauth.Key) (*oauth.Token, oauth.Key, error) {
	s.reads++
	if s.reads <= 2 {
		return s.stale, s.key, nil
	}
	return s.TokenStore.Get(ctx, key)
}

// Two processes refresh the same token: the second one's refresh token was
// already rotated away (invalid_grant); it takes the first one's new token
// from the shared store instead of deleting it.
func TestConcurrentRefreshKeepsTheRotatedToken(t *testing.T) {
	r := newResource(t, oauthtest.Options{})
	store := oauth.NewMemoryStore()
	ctx := context.Background()
	c1, _ := oauth.NewClient(oauth.Config{ServerURL: r.url, Store: store})
	if err := c1.Login(ctx, oauth.LoginOptions{Subject: "gus", Open: oauthtest.Browser("gus")}); err != nil {
		t.Fatal(err)
	}
	old, key, _ := store.Get(ctx, oauth.Key{Subject: "gus", Resource: c1.Resource()})
	old.Expiry = time.Now().Add(-time.Minute)
	must(t, store.Put(ctx, key, old))
	fresh, err := c1.Token(ctx, "gus") // the first process refreshes (rotation)
	if err != nil || fresh.RefreshToken == old.RefreshToken {
		t.Fatalf("first refresh: %v", err)
	}
	c2, _ := oauth.NewClient(oauth.Config{ServerURL: r.url, Store: &staleStore{TokenStore: store, stale: old, key: key}})
	got, err := c2.Token(ctx, "gus")
	if err != nil || got.AccessToken != fresh.AccessToken {
		t.Fatalf("second process: %v, %v", got, err)
	}
	if cur, _, err := store.Get(ctx, key); err != nil || cur.AccessToken != fresh.AccessToken {
		t.Fatalf("the rotated token was lost: %v", err)
	}
}
