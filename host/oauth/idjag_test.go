package oauth_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/oauth/oauthtest"
)

// The canaries: an ID token the identity provider accepts, and one it
// refuses. Neither, nor any ID-JAG, may appear in an error.
const (
	canaryIDToken  = "eyJhbGciOiJFUzI1NiJ9.CANARY-ID-TOKEN-7f3a.sig"
	refusedIDToken = "eyJhbGciOiJFUzI1NiJ9.CANARY-REFUSED-ID-TOKEN-9c1e.sig"
)

func idjagResource(t *testing.T) *resource {
	t.Helper()
	return newResource(t, oauthtest.Options{
		Clients:     map[string]string{"mcp-client": "mcp-secret"},
		IDPClients:  map[string]string{"idp-mcp-client": "idp-secret", "idp-public": ""},
		IDTokens:    map[string]string{canaryIDToken: "alice@example.com"},
		AuthMethods: []string{"client_secret_basic"},
	})
}

func idjagConfig(r *resource, idToken string) oauth.Config {
	return oauth.Config{
		ServerURL: r.url, Grant: oauth.GrantIDJAG,
		ClientID: "mcp-client", ClientSecret: "mcp-secret",
		IDPTokenEndpoint: r.as.IDPTokenEndpoint(), IDPClientID: "idp-mcp-client", IDPClientSecret: "idp-secret",
		IDToken: func(context.Context) (string, error) { return idToken, nil },
	}
}

func TestIDJAGGrant(t *testing.T) {
	r := idjagResource(t)
	c, err := oauth.NewClient(idjagConfig(r, canaryIDToken))
	if err != nil {
		t.Fatal(err)
	}
	rt := c.Transport(nil, oauth.TransportOptions{})
	got, err := get(context.Background(), rt, r.url)
	if err != nil || got != "user=alice@example.com" {
		t.Fatalf("request = %q, %v", got, err)
	}
	if n := r.as.Requests("idp"); n != 1 {
		t.Errorf("token exchanges = %d, want 1", n)
	}
	if n := r.as.Requests("token:" + oauthtest.GrantJWTBearer); n != 1 {
		t.Errorf("JWT bearer grants = %d, want 1", n)
	}
	// The token is kept: the next request needs no new exchange.
	if _, err := get(context.Background(), rt, r.url); err != nil {
		t.Fatal(err)
	}
	if n := r.as.Requests("idp"); n != 1 {
		t.Errorf("token exchanges after a second request = %d, want 1", n)
	}
	// Token() renews without a login once the token is gone.
	if err := c.Logout(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Token(context.Background(), ""); err != nil {
		t.Fatalf("Token after logout: %v", err)
	}
	if n := r.as.Requests("idp"); n != 2 {
		t.Errorf("token exchanges after logout = %d, want 2", n)
	}
	if _, _, err := c.StartAuthorization(context.Background(), oauth.AuthRequest{RedirectURI: "http://127.0.0.1:1/cb"}); err == nil {
		t.Error("StartAuthorization with the id-jag grant succeeded")
	}
}

func TestIDJAGPublicIdPClient(t *testing.T) {
	r := idjagResource(t)
	cfg := idjagConfig(r, canaryIDToken)
	// An IdP client without a secret; its ID-JAG names it, which is not
	// the authorization server's client: the JWT bearer grant fails.
	cfg.IDPClientID, cfg.IDPClientSecret = "idp-public", ""
	c, err := oauth.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Token(context.Background(), "")
	var ae *oauth.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "invalid_grant" {
		t.Fatalf("err = %v, want the authorization server's invalid_grant", err)
	}
	if r.as.Requests("idp") != 1 {
		t.Fatalf("the public IdP client's exchange was refused: %v", err)
	}
	checkNoCanary(t, err, r)
}

func TestIDJAGErrorsHideTokens(t *testing.T) {
	tests := []struct {
		name string
		edit func(*oauth.Config)
		want string
	}{
		{"refused ID token", func(c *oauth.Config) {
			c.IDToken = func(context.Context) (string, error) { return refusedIDToken, nil }
		}, "invalid_grant"},
		{"wrong IdP secret", func(c *oauth.Config) { c.IDPClientSecret = "wrong" }, "invalid_client"},
		{"wrong AS secret", func(c *oauth.Config) { c.ClientSecret = "wrong" }, "invalid_client"},
		{"empty ID token", func(c *oauth.Config) {
			c.IDToken = func(context.Context) (string, error) { return "", nil }
		}, "no ID token"},
		{"ID token source fails", func(c *oauth.Config) {
			c.IDToken = func(context.Context) (string, error) { return "", errors.New("vault sealed") }
		}, "vault sealed"},
		{"IdP unreachable", func(c *oauth.Config) { c.IDPTokenEndpoint = "http://127.0.0.1:1/token" }, "identity provider"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := idjagResource(t)
			cfg := idjagConfig(r, canaryIDToken)
			tt.edit(&cfg)
			c, err := oauth.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = get(context.Background(), c.Transport(nil, oauth.TransportOptions{}), r.url)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
			checkNoCanary(t, err, r)
		})
	}
}

// checkNoCanary fails when err shows an ID token or an issued ID-JAG.
func checkNoCanary(t *testing.T, err error, r *resource) {
	t.Helper()
	secrets := append([]string{canaryIDToken, refusedIDToken, "CANARY"}, r.as.IDJAGs()...)
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Fatalf("the error shows a token (%q): %v", s, err)
		}
	}
}

func TestIDJAGConfig(t *testing.T) {
	src := func(context.Context) (string, error) { return "x", nil }
	tests := []struct {
		name string
		cfg  oauth.Config
		want string
	}{
		{"no client", oauth.Config{IDPTokenEndpoint: "https://idp.example.com/token", IDToken: src}, "client id"},
		{"no IdP endpoint", oauth.Config{ClientID: "a", IDToken: src}, "token endpoint"},
		{"http IdP endpoint", oauth.Config{ClientID: "a", IDPTokenEndpoint: "http://idp.example.com/token", IDToken: src}, "https"},
		{"no ID token source", oauth.Config{ClientID: "a", IDPTokenEndpoint: "https://idp.example.com/token"}, "ID token source"},
		{"ok", oauth.Config{ClientID: "a", IDPTokenEndpoint: "https://idp.example.com/token", IDToken: src}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.ServerURL, tt.cfg.Grant = "https://mcp.example.com/mcp", oauth.GrantIDJAG
			_, err := oauth.NewClient(tt.cfg)
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
