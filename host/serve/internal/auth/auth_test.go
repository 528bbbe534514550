package auth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http/httptest"
	"testing"

	"github.com/agenthost/agenthost/config"
)

func tokenHash(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

// TestAuthenticate: a bearer token names the identity whose hash it has,
// with its roles, owner and subjects; anything else names none.
func TestAuthenticate(t *testing.T) {
	a, err := New(&config.Serve{Identities: []config.Identity{
		{Name: "Backend", TokenSHA256: tokenHash("tok-b"), Roles: []string{"api"}, Subjects: []string{"user-*"}},
		{Name: "alice", TokenSHA256: tokenHash("tok-a"), Roles: []string{"approver"}, Tenant: "Acme"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, header string
		want         string // identity name; "" none
		owner        string
		role         string // a role it holds
		actsFor      string // a subject it may act for besides its own name
		notFor       string // one it may not
	}{
		{"bearer", "Bearer tok-b", "Backend", "identity:backend", "api", "user-42", "admin"},
		{"scheme in any case, token trimmed", "bearer  tok-a ", "alice", "tenant:acme", "approver", "alice", "user-42"},
		{"unknown token", "Bearer nope", "", "", "", "", ""},
		{"other scheme", "Basic tok-b", "", "", "", "", ""},
		{"no token", "Bearer ", "", "", "", "", ""},
		{"no header", "", "", "", "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			id := a.Authenticate(r)
			if tc.want == "" {
				if id != nil {
					t.Fatalf("authenticated as %q", id.Name)
				}
				if id.Has("api") {
					t.Fatal("no identity holds a role")
				}
				return
			}
			if id == nil || id.Name != tc.want || id.Owner != tc.owner || !id.Has(tc.role) || id.Has("admin") {
				t.Fatalf("identity %+v, want %s owned by %s holding %s only", id, tc.want, tc.owner, tc.role)
			}
			if ok, err := id.MayActFor(tc.actsFor); !ok || err != nil {
				t.Errorf("may not act for %q: %v", tc.actsFor, err)
			}
			if ok, _ := id.MayActFor(tc.notFor); ok {
				t.Errorf("may act for %q", tc.notFor)
			}
		})
	}
}

func TestNewRefusesBadIdentities(t *testing.T) {
	for _, id := range []config.Identity{{Name: ""}, {Name: "x", Tenant: " "}, {Name: "x", Subjects: []string{"["}}} {
		if _, err := New(&config.Serve{Identities: []config.Identity{id}}); err == nil {
			t.Errorf("%+v accepted", id)
		}
	}
}
