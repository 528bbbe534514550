package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

// movingResource is a protected resource at url whose authorization
// server is as1 until move is called, then as2 (at2 records what as2
// receives). Both authenticate clients with client_secret_basic.
func movingResource(t *testing.T) (as1, as2 *oauthtest.Server, at2 *redirecttest.Recorder, url string, move func()) {
	t.Helper()
	at2 = &redirecttest.Recorder{}
	as1 = oauthtest.New(oauthtest.Options{AuthMethods: []string{oauth.AuthClientSecretBasic}})
	t.Cleanup(as1.Close)
	as2 = oauthtest.New(oauthtest.Options{AuthMethods: []string{oauth.AuthClientSecretBasic}, Observe: at2.Record})
	t.Cleanup(as2.Close)
	inner := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "user=%s", req.Header.Get(oauthtest.UserHeader))
	})
	resourceURL := func() string { return url }
	var current atomic.Pointer[http.Handler]
	set := func(h http.Handler) { current.Store(&h) }
	set(as1.Protect(resourceURL, inner))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*current.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	url = srv.URL + "/mcp"
	return as1, as2, at2, url, func() { set(as2.Protect(resourceURL, inner)) }
}

// The protected resource moves from authorization server AS1 to AS2 after
// a subject logged in at AS1 (with a client AS1 registered, and its
// secret). When the access token expires, the token is not refreshed at
// AS2: AS2 never receives AS1's refresh token nor the client's secret;
// the token is dropped, and the subject logs in again, at AS2.
func TestRefreshStaysWithTheIssuer(t *testing.T) {
	as1, as2, at2, url, move := movingResource(t)

	ctx := context.Background()
	store := oauth.NewMemoryStore()
	c1, err := oauth.NewClient(oauth.Config{ServerURL: url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := get(ctx, c1.Transport(nil, oauth.TransportOptions{Subject: "ann", Authorize: loginHook(c1, "ann", nil)}), url); err != nil || got != "user=ann" {
		t.Fatalf("the login at AS1: %q, %v", got, err)
	}
	old, key, err := store.Get(ctx, oauth.Key{Subject: "ann", Resource: c1.Resource()})
	if err != nil || key.Issuer != as1.URL() || old.RefreshToken == "" || old.ClientSecret == "" || old.AuthMethod != oauth.AuthClientSecretBasic {
		t.Fatalf("stored after the login: %v %+v %v", old, key, err)
	}
	old.Expiry = time.Now().Add(-time.Minute)
	must(t, store.Put(ctx, key, old))

	// The resource now names AS2; a new process discovers it.
	move()
	c2, err := oauth.NewClient(oauth.Config{ServerURL: url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c2.Token(ctx, "ann")
	sawAtAS2 := func() {
		t.Helper()
		for what, v := range map[string]string{"AS1's refresh token": old.RefreshToken, "AS1's client secret": old.ClientSecret, "AS1's access token": old.AccessToken} {
			if at2.Saw(v) {
				t.Errorf("AS2 received %s", what)
			}
		}
	}
	sawAtAS2()
	if !errors.Is(err, oauth.ErrNoToken) || !strings.Contains(err.Error(), "log in again") {
		t.Fatalf("Token after the move = %v, want ErrNoToken (log in again)", err)
	}
	if _, _, err := store.Get(ctx, key); !errors.Is(err, oauth.ErrNoToken) {
		t.Fatalf("AS1's token is still stored: %v", err)
	}
	must(t, store.Put(ctx, key, old)) // as before, for the Transport's own path
	var logins atomic.Int32
	rt := c2.Transport(nil, oauth.TransportOptions{Subject: "ann", Authorize: loginHook(c2, "ann", &logins)})
	if got, err := get(ctx, rt, url); err != nil || got != "user=ann" {
		t.Fatalf("the request after the move: %q, %v", got, err)
	}
	sawAtAS2()
	if n := as2.Requests("token:refresh_token") + as1.Requests("token:refresh_token"); n != 0 {
		t.Errorf("%d refresh requests", n)
	}
	if logins.Load() != 1 {
		t.Errorf("%d logins after the move, want 1", logins.Load())
	}
	entries, _ := store.List(ctx)
	if len(entries) != 1 || entries[0].Key.Issuer != as2.URL() {
		t.Fatalf("stored after the move: %+v", entries)
	}
}

// The protected resource moves from AS1 to AS2 while the same client is
// running (SEP-2352): the server refuses AS1's token, and the client
// discovers the resource's metadata afresh, registers with AS2 and logs in
// there, never presenting AS1's client at AS2.
func TestMigrationRediscovers(t *testing.T) {
	_, as2, at2, url, move := movingResource(t)

	ctx := context.Background()
	store := oauth.NewMemoryStore()
	c, err := oauth.NewClient(oauth.Config{ServerURL: url, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var logins atomic.Int32
	rt := c.Transport(nil, oauth.TransportOptions{Subject: "ann", Authorize: loginHook(c, "ann", &logins)})
	if got, err := get(ctx, rt, url); err != nil || got != "user=ann" {
		t.Fatalf("the login at AS1: %q, %v", got, err)
	}
	old, _, err := store.Get(ctx, oauth.Key{Subject: "ann", Resource: c.Resource()})
	if err != nil {
		t.Fatal(err)
	}

	move()
	if got, err := get(ctx, rt, url); err != nil || got != "user=ann" {
		t.Fatalf("the request after the move: %q, %v", got, err)
	}
	if as2.Requests("register") != 1 {
		t.Errorf("%d registrations at AS2, want 1", as2.Requests("register"))
	}
	if logins.Load() != 2 {
		t.Errorf("%d logins, want 2 (AS1, then AS2)", logins.Load())
	}
	for what, v := range map[string]string{"AS1's refresh token": old.RefreshToken, "AS1's client secret": old.ClientSecret, "AS1's access token": old.AccessToken} {
		if at2.Saw(v) {
			t.Errorf("AS2 received %s", what)
		}
	}
	entries, _ := store.List(ctx)
	if len(entries) != 1 || entries[0].Key.Issuer != as2.URL() {
		t.Fatalf("stored after the move: %+v", entries)
	}
}
