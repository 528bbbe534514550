package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

const (
	canaryAssertion  = "CANARY.WIF-ASSERTION.7d1e"
	refusedAssertion = "CANARY.REFUSED-ASSERTION.90ab"
)

func TestJWTBearerGrant(t *testing.T) {
	var mu sync.Mutex
	var forms []url.Values
	r := newResource(t, oauthtest.Options{Assertions: map[string]string{canaryAssertion: "workload-1"},
		Observe: func(req *http.Request, body []byte) {
			if req.URL.Path == "/token" {
				f, _ := url.ParseQuery(string(body))
				mu.Lock()
				forms = append(forms, f)
				mu.Unlock()
			}
		}})
	var reads atomic.Int32
	c, err := oauth.NewClient(oauth.Config{ServerURL: r.url, Grant: oauth.GrantJWTBearer, ClientID: "wif-client",
		Assertion: func(context.Context) (string, error) { reads.Add(1); return canaryAssertion + "\n", nil }})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Unattended() {
		t.Error("the jwt-bearer grant is not unattended")
	}
	got, err := get(context.Background(), c.Transport(nil, oauth.TransportOptions{Subject: "svc"}), r.url)
	if err != nil || got != "user=workload-1" {
		t.Fatalf("request = %q, %v", got, err)
	}
	if len(forms) != 1 {
		t.Fatalf("%d token requests", len(forms))
	}
	f := forms[0]
	if f.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" || f.Get("assertion") != canaryAssertion ||
		f.Get("resource") != r.url || f.Get("client_id") != "wif-client" {
		t.Errorf("token request %v", f)
	}
	tok, _, err := c.Store().Get(context.Background(), oauth.Key{Subject: "svc", Resource: c.Resource()})
	if err != nil || tok.RefreshToken != "" {
		t.Fatalf("stored %v, %v: want a token without a refresh token", tok, err)
	}
	if reads.Load() != 1 {
		t.Errorf("the assertion was read %d times for one grant", reads.Load())
	}
}

// A refused assertion fails the request: one token request, no retry, no
// other grant (no authorization request, no registration, no login hook),
// and the error does not show the assertion even when the server quotes it.
// Later requests do not send the refused assertion again; a new one from
// the source is tried.
func TestJWTBearerRefusalIsFinal(t *testing.T) {
	var tokenRequests atomic.Int32
	as := fakeIssuer(t, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		tokenRequests.Add(1)
		_ = req.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant",
			"error_description": "assertion " + req.PostForm.Get("assertion") + " is expired"})
	}))
	res := protectedResource(t, func() string { return as.URL })
	var logins atomic.Int32
	var current atomic.Value
	current.Store(refusedAssertion)
	c, err := oauth.NewClient(oauth.Config{ServerURL: res.URL + "/mcp", Grant: oauth.GrantJWTBearer,
		Assertion: func(context.Context) (string, error) { return current.Load().(string), nil }})
	if err != nil {
		t.Fatal(err)
	}
	rt := c.Transport(nil, oauth.TransportOptions{Authorize: func(context.Context, *oauth.AuthorizationRequiredError) error {
		logins.Add(1)
		return nil
	}})
	_, err = get(context.Background(), rt, res.URL+"/mcp")
	var ae *oauth.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "invalid_grant" || !oauth.IsAuthorizationError(err) {
		t.Fatalf("err = %v, want the server's invalid_grant", err)
	}
	if strings.Contains(err.Error(), "CANARY") || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("the error shows the assertion, or nothing was redacted: %v", err)
	}
	if n := tokenRequests.Load(); n != 1 || logins.Load() != 0 {
		t.Fatalf("token requests %d, login hook calls %d: want one request and no other grant", n, logins.Load())
	}
	for range 3 {
		_, err := get(context.Background(), rt, res.URL+"/mcp")
		if !errors.As(err, &ae) || ae.Code != "invalid_grant" || strings.Contains(err.Error(), "CANARY") {
			t.Fatalf("a later request: %v, want the remembered invalid_grant", err)
		}
	}
	if n := tokenRequests.Load(); n != 1 {
		t.Fatalf("the refused assertion was sent %d times", n)
	}
	current.Store("CANARY.ROTATED-ASSERTION.77aa")
	if _, err := get(context.Background(), rt, res.URL+"/mcp"); err == nil || tokenRequests.Load() != 2 {
		t.Fatalf("a rotated assertion: %v, %d token requests; want it tried once", err, tokenRequests.Load())
	}
}

func TestJWTBearerAssertionSource(t *testing.T) {
	tests := []struct {
		name string
		src  func(context.Context) (string, error)
		want error
		text string
	}{
		{"empty", func(context.Context) (string, error) { return " \n", nil }, oauth.ErrNoAssertion, ""},
		{"source fails", func(context.Context) (string, error) { return "", errors.New("metadata server down") }, nil, "metadata server down"},
		{"not a JWT", func(context.Context) (string, error) { return "CANARY not a jwt", nil }, nil, "not a compact JWT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newResource(t, oauthtest.Options{})
			c, err := oauth.NewClient(oauth.Config{ServerURL: r.url, Grant: oauth.GrantJWTBearer, Assertion: tt.src})
			if err != nil {
				t.Fatal(err)
			}
			_, err = get(context.Background(), c.Transport(nil, oauth.TransportOptions{}), r.url)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.text) || strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("err = %v", err)
			}
			if r.as.Requests("token") != 0 {
				t.Errorf("a token request was sent without an assertion")
			}
		})
	}
	if _, err := oauth.NewClient(oauth.Config{ServerURL: "https://mcp.example.com/mcp", Grant: oauth.GrantJWTBearer}); err == nil {
		t.Error("the jwt-bearer grant was accepted without an assertion source")
	}
}

// A server error (5xx) is not a judgement of the assertion: the next
// request tries it again.
func TestJWTBearerServerErrorIsNotARefusal(t *testing.T) {
	var tokenRequests atomic.Int32
	as := fakeIssuer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tokenRequests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"temporarily_unavailable"}`))
	}))
	res := protectedResource(t, func() string { return as.URL })
	c, err := oauth.NewClient(oauth.Config{ServerURL: res.URL + "/mcp", Grant: oauth.GrantJWTBearer,
		Assertion: func(context.Context) (string, error) { return canaryAssertion, nil }})
	if err != nil {
		t.Fatal(err)
	}
	rt := c.Transport(nil, oauth.TransportOptions{})
	for range 2 {
		if _, err := get(context.Background(), rt, res.URL+"/mcp"); err == nil {
			t.Fatal("a 503 token answer gave a token")
		}
	}
	if n := tokenRequests.Load(); n != 2 {
		t.Fatalf("%d token requests for two requests, want 2", n)
	}
}
