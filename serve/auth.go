package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/config"
)

// identity is an authenticated caller.
type identity struct {
	name  string
	roles []string
}

func (id *identity) has(role string) bool {
	if id == nil {
		return false
	}
	for _, r := range id.roles {
		if r == role {
			return true
		}
	}
	return false
}

// authenticator maps bearer tokens (by SHA-256) and certificate names to
// identities.
type authenticator struct {
	byHash map[[sha256.Size]byte]*identity
	byName map[string]*identity
	// certs: client certificates are accepted (serve.tls.clientCA set).
	certs bool
}

func newAuthenticator(cfg *config.Serve) *authenticator {
	a := &authenticator{byHash: map[[sha256.Size]byte]*identity{}, byName: map[string]*identity{}, certs: cfg.TLS.ClientCA != ""}
	for _, ci := range cfg.Identities {
		id := &identity{name: ci.Name, roles: append([]string(nil), ci.Roles...)}
		a.byName[ci.Name] = id
		if b, err := hex.DecodeString(ci.TokenSHA256); err == nil && len(b) == sha256.Size {
			a.byHash[[sha256.Size]byte(b)] = id
		}
	}
	return a
}

// authenticate returns the caller's identity, or nil. A bearer token is
// looked up by its hash, so the token itself is never kept or compared;
// without one, a verified client certificate's common name names the
// identity.
func (a *authenticator) authenticate(r *http.Request) *identity {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return nil
		}
		return a.byHash[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	}
	if a.certs && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		return a.byName[r.TLS.VerifiedChains[0][0].Subject.CommonName]
	}
	return nil
}

type identityKey struct{}

func withIdentity(ctx context.Context, id *identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

func identityOf(ctx context.Context) *identity {
	id, _ := ctx.Value(identityKey{}).(*identity)
	return id
}

// require wraps h so that only callers holding role reach it: 401 without a
// valid credential, 403 without the role.
func (s *Server) require(role string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := s.auth.authenticate(r)
		if id == nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="agenthost"`)
			writeError(w, http.StatusUnauthorized, "unauthenticated", "a valid bearer token or client certificate is required")
			return
		}
		if !id.has(role) {
			writeError(w, http.StatusForbidden, "forbidden", "the identity "+quote(id.name)+" does not hold the "+role+" role")
			return
		}
		h(w, r.WithContext(withIdentity(r.Context(), id)))
	}
}

func quote(s string) string { return `"` + s + `"` }
