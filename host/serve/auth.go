package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/glob"
)

// identity is an authenticated caller.
type identity struct {
	name  string
	roles []string
	// key is the name in normalised form (approvals.NormalizeID): the
	// form in which identities, subjects and approvers are compared.
	key string
	// owner is whose the sessions this identity creates are: its
	// tenant's when it has one, else its own. Only identities of the same
	// owner see a session; to every other one it does not exist.
	owner string
	// subjects are the patterns of the subjects it may act for besides
	// its own name (serve.identities[].subjects).
	subjects []glob.Pattern
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

// mayActFor reports whether the identity may create a session for
// subject: its own name, or a subject (compared normalised) that one of
// its serve.identities[].subjects patterns matches. A session's subject
// selects whose OAuth tokens and credentials its calls carry, so this is
// the rule that keeps one caller from acting as another's users.
func (id *identity) mayActFor(subject string) (bool, error) {
	key, err := approvals.NormalizeID(subject)
	if err != nil {
		return false, err
	}
	if key == id.key {
		return true, nil
	}
	return glob.MatchAny(id.subjects, key), nil
}

// authenticator maps bearer tokens (by SHA-256) and certificate names to
// identities.
type authenticator struct {
	byHash map[[sha256.Size]byte]*identity
	byName map[string]*identity
	// certs: client certificates are accepted (serve.tls.clientCA set).
	certs bool
}

func newAuthenticator(cfg *config.Serve) (*authenticator, error) {
	a := &authenticator{byHash: map[[sha256.Size]byte]*identity{}, byName: map[string]*identity{}, certs: cfg.TLS.ClientCA != ""}
	for i, ci := range cfg.Identities {
		key, err := approvals.NormalizeID(ci.Name)
		if err != nil || key == "" {
			return nil, fmt.Errorf("serve.identities[%d].name: not a valid identity name", i)
		}
		id := &identity{name: ci.Name, key: key, roles: append([]string(nil), ci.Roles...), owner: "identity:" + key}
		if ci.Tenant != "" {
			tenant, err := approvals.NormalizeID(ci.Tenant)
			if err != nil || tenant == "" {
				return nil, fmt.Errorf("serve.identities[%d].tenant: not a valid tenant name", i)
			}
			id.owner = "tenant:" + tenant
		}
		for j, s := range ci.Subjects {
			p, err := glob.Compile(s)
			if err != nil {
				return nil, fmt.Errorf("serve.identities[%d].subjects[%d]: %w", i, j, err)
			}
			id.subjects = append(id.subjects, p)
		}
		a.byName[ci.Name] = id
		if b, err := hex.DecodeString(ci.TokenSHA256); err == nil && len(b) == sha256.Size {
			a.byHash[[sha256.Size]byte(b)] = id
		}
	}
	return a, nil
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
	if a.byCertificate(r) {
		return a.byName[r.TLS.VerifiedChains[0][0].Subject.CommonName]
	}
	return nil
}

// byCertificate reports whether r authenticates by its client certificate
// (verified, and no Authorization header): a credential the browser
// attaches by itself, to any site's requests.
func (a *authenticator) byCertificate(r *http.Request) bool {
	return a.certs && r.Header.Get("Authorization") == "" && r.TLS != nil &&
		len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0
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
