package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/internal/httpredirect"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

const canaryClientSecret = "CANARY-CLIENT-SECRET-d4c1"

// fakeIssuer is an authorization server on a loopback port whose token
// endpoint is what the test makes it: a redirect, or an answer.
func fakeIssuer(t *testing.T, token http.Handler) *redirecttest.Server {
	var as *redirecttest.Server
	as = redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"issuer": as.URL, "token_endpoint": as.URL + "/token",
				"authorization_endpoint": as.URL + "/authorize", "code_challenge_methods_supported": []string{"S256"}})
		default:
			token.ServeHTTP(w, r)
		}
	}))
	return as
}

// protectedResource serves the protected resource metadata naming issuer
// for the resource at its /mcp.
func protectedResource(t *testing.T, issuer func() string) *redirecttest.Server {
	var res *redirecttest.Server
	res = redirecttest.New(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/oauth-protected-resource/mcp" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"resource": res.URL + "/mcp", "authorization_servers": []string{issuer()}})
	}))
	return res
}

// The OAuth client's requests follow the one redirect policy: a token
// endpoint that redirects to another origin (another port) does not get
// the client's secret sent there; within its origin the redirect is
// followed. A caller's Config.HTTPClient gets the same policy.
func TestOAuthRedirects(t *testing.T) {
	for _, tt := range redirecttest.Cases {
		t.Run(tt.Name, func(t *testing.T) {
			answer := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"access_token":"at","token_type":"Bearer","expires_in":3600}`)
			})
			other := redirecttest.New(t, answer)
			var target string
			as := fakeIssuer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/moved/token" {
					answer(w, r)
					return
				}
				http.Redirect(w, r, target+"/moved"+r.URL.Path, http.StatusTemporaryRedirect)
			}))
			target = as.URL
			if tt.Elsewhere {
				target = other.URL
			}
			res := protectedResource(t, func() string { return as.URL })
			cfg := oauth.Config{ServerURL: res.URL + "/mcp", Grant: oauth.GrantClientCredentials, ClientID: "svc", ClientSecret: canaryClientSecret}
			if tt.CallerClient {
				cfg.HTTPClient = &http.Client{Timeout: 5 * time.Second}
			}
			c, err := oauth.NewClient(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Token(context.Background(), "svc")
			if n := len(other.Requests()); n != 0 {
				t.Fatalf("the other origin received %d requests (the client secret seen: %t)", n, other.Saw(canaryClientSecret))
			}
			if !tt.Elsewhere {
				if err != nil {
					t.Fatal(err)
				}
				if !as.Saw(canaryClientSecret) {
					t.Fatal("the token request did not reach the token endpoint's origin")
				}
				return
			}
			if !errors.Is(err, httpredirect.ErrRefused) {
				t.Fatalf("err = %v, want a refused redirect", err)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("the error shows the secret: %v", err)
			}
		})
	}
}
