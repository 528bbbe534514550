package oauth

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Dynamic registration declares the application_type the redirect URI
// implies (SEP-837): a loopback listener or a private-use scheme is a
// native application, a remote host a web one.
func TestRegisterApplicationType(t *testing.T) {
	tests := []struct {
		redirect, want string
	}{
		{"http://127.0.0.1:8123/callback", "native"},
		{"http://localhost:8123/callback", "native"},
		{"http://[::1]:8123/callback", "native"},
		{"com.example.agent:/callback", "native"},
		{"https://agents.example.com/oauth/callback", "web"},
		{"http://agents.internal:8080/oauth/callback", "web"},
	}
	for _, tt := range tests {
		t.Run(tt.redirect, func(t *testing.T) {
			var got map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewDecoder(r.Body).Decode(&got)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"client_id":"dyn-1"}`))
			}))
			defer srv.Close()
			c := &Client{hc: srv.Client()}
			d := &discovery{as: &ServerMetadata{Issuer: srv.URL, RegistrationEndpoint: srv.URL + "/register"}, issuer: srv.URL}
			if _, err := c.register(context.Background(), d, tt.redirect); err != nil {
				t.Fatal(err)
			}
			if got["application_type"] != tt.want {
				t.Errorf("application_type = %v, want %q (registration %v)", got["application_type"], tt.want, got)
			}
		})
	}
}

// Issuer identifiers compare as strings (RFC 8414 §3.3, RFC 9207 §2.4,
// SEP-2468): a variant equal only after URL normalisation is another
// issuer.
func TestSameIssuerExact(t *testing.T) {
	const issuer = "https://as.example.com"
	tests := []struct {
		other string
		want  bool
	}{
		{"https://as.example.com", true},
		{"https://as.example.com/", false},
		{"HTTPS://as.example.com", false},
		{"https://AS.example.com", false},
		{"https://as.example.com:443", false},
		{"https://as.example.com/%7Etenant", false},
		{"https://as.example.com/~tenant", false},
	}
	for _, tt := range tests {
		if got := sameIssuer(tt.other, issuer); got != tt.want {
			t.Errorf("sameIssuer(%q, %q) = %v, want %v", tt.other, issuer, got, tt.want)
		}
		if got := sameIssuer(issuer, tt.other); got != tt.want {
			t.Errorf("sameIssuer(%q, %q) = %v, want %v", issuer, tt.other, got, tt.want)
		}
	}
	if sameIssuer("https://as.example.com/tenant/", "https://as.example.com/tenant") {
		t.Error("a trailing slash on a path is a different issuer")
	}
}
