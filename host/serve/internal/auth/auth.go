// Package auth authenticates serve's callers: the identities of
// serve.identities (bearer tokens known by their SHA-256 hash only,
// client certificates by their verified common name), each one's roles,
// owner (its tenant, or itself) and the subjects it may act for, and the
// identity a request carries in its context.
package auth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/glob"
)

// Identity is an authenticated caller.
type Identity struct {
	Name  string
	roles []string
	// Key is the name in normalised form (ids.NormalizeID): the
	// form in which identities, subjects and approvers are compared.
	Key string
	// Owner is whose the sessions this identity creates are: its
	// tenant's when it has one, else its own. Only identities of the same
	// owner see a session; to every other one it does not exist.
	Owner string
	// subjects are the patterns of the subjects it may act for besides
	// its own name (serve.identities[].subjects).
	subjects []glob.Pattern
}

// Has reports whether the identity holds role (a nil one holds none).
func (id *Identity) Has(role string) bool {
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

// MayActFor reports whether the identity may create a session for
// subject: its own name, or a subject (compared normalised) that one of
// its serve.identities[].subjects patterns matches. A session's subject
// selects whose OAuth tokens and credentials its calls carry, so this is
// the rule that keeps one caller from acting as another's users.
func (id *Identity) MayActFor(subject string) (bool, error) {
	key, err := ids.NormalizeID(subject)
	if err != nil {
		return false, err
	}
	if key == id.Key {
		return true, nil
	}
	return glob.MatchAny(id.subjects, key), nil
}

// Authenticator maps bearer tokens (by SHA-256) and certificate names to
// identities.
type Authenticator struct {
	byHash map[[sha256.Size]byte]*Identity
	byName map[string]*Identity
	// certs: client certificates are accepted (serve.tls.clientCA set).
	certs bool
}

// New reads the identities of cfg (serve.identities).
func New(cfg *config.Serve) (*Authenticator, error) {
	a := &Authenticator{byHash: map[[sha256.Size]byte]*Identity{}, byName: map[string]*Identity{}, certs: cfg.TLS.ClientCA != ""}
	for i, ci := range cfg.Identities {
		key, err := ids.NormalizeID(ci.Name)
		if err != nil || key == "" {
			return nil, fmt.Errorf("serve.identities[%d].name: not a valid identity name", i)
		}
		id := &Identity{Name: ci.Name, Key: key, roles: append([]string(nil), ci.Roles...), Owner: "identity:" + key}
		if ci.Tenant != "" {
			tenant, err := ids.NormalizeID(ci.Tenant)
			if err != nil || tenant == "" {
				return nil, fmt.Errorf("serve.identities[%d].tenant: not a valid tenant name", i)
			}
			id.Owner = "tenant:" + tenant
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

// Authenticate returns the caller's identity, or nil. A bearer token is
// looked up by its hash, so the token itself is never kept or compared;
// without one, a verified client certificate's common name names the
// identity.
func (a *Authenticator) Authenticate(r *http.Request) *Identity {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			return nil
		}
		return a.byHash[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	}
	if a.ByCertificate(r) {
		return a.byName[r.TLS.VerifiedChains[0][0].Subject.CommonName]
	}
	return nil
}

// ByCertificate reports whether r authenticates by its client certificate
// (verified, and no Authorization header): a credential the browser
// attaches by itself, to any site's requests.
func (a *Authenticator) ByCertificate(r *http.Request) bool {
	return a.certs && r.Header.Get("Authorization") == "" && r.TLS != nil &&
		len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0
}

type identityKey struct{}

// WithIdentity returns ctx carrying the request's identity.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityOf is the identity WithIdentity put in ctx, or nil.
func IdentityOf(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
