package oauth

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/oauth/internal/jose"
)

// Token is a stored grant: the access token and what is needed to renew it.
// Its String, GoString, Format and LogValue methods print no secret.
type Token struct {
	AccessToken  string
	RefreshToken string
	// Expiry is when the access token expires; zero when the server did
	// not say.
	Expiry time.Time
	// Scopes are the scopes granted (or, when the server did not say,
	// requested).
	Scopes []string
	// ClientID and ClientSecret are the client the token was issued to
	// (a dynamically registered client is only known here), and
	// AuthMethod its token endpoint authentication method, so that a
	// later process can refresh the token.
	ClientID     string
	ClientSecret string
	AuthMethod   string
	// DPoPKey, when set, is the key pair the token is bound to (RFC
	// 9449): the access token is presented with the DPoP scheme and a
	// proof signed with it, and the refresh token is only usable with it.
	// It is one subject's, made for the grant, and kept with the token.
	DPoPKey *ecdsa.PrivateKey
}

// DPoPThumbprint is the RFC 7638 thumbprint of the public half of the key
// the token is bound to (what the authorization server names as cnf.jkt),
// for showing which key a token needs; "" for a bearer token. It never
// reveals the key.
func (t *Token) DPoPThumbprint() string {
	if t.DPoPKey == nil {
		return ""
	}
	return jose.Thumbprint(&t.DPoPKey.PublicKey)
}

// scheme is the Authorization scheme the token is presented with.
func (t *Token) scheme() string {
	if t.DPoPKey != nil {
		return tokenTypeDPoP
	}
	return tokenTypeBearer
}

// expired reports whether the token is expired at now, with a margin.
func (t *Token) expired(now time.Time) bool {
	return !t.Expiry.IsZero() && !now.Before(t.Expiry.Add(-expiryMargin))
}

// expiryMargin renews a token this long before it expires.
const expiryMargin = 30 * time.Second

func (t *Token) String() string {
	if t == nil {
		return "oauth.Token(nil)"
	}
	exp := "no expiry"
	if !t.Expiry.IsZero() {
		exp = "expires " + t.Expiry.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("oauth.Token{[redacted], %s, scopes %q, refresh %t, dpop %t}", exp, t.Scopes, t.RefreshToken != "", t.DPoPKey != nil)
}

// GoString redacts like String.
func (t *Token) GoString() string { return t.String() }

// Format redacts for every verb, %v, %+v and %#v included.
func (t *Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(t.String())) }

// LogValue redacts in slog records.
func (t *Token) LogValue() slog.Value { return slog.StringValue(t.String()) }

// Key names a stored token: the subject (end user or tenant) it acts for,
// the resource (canonical MCP server URL) and the issuer (authorization
// server) that issued it.
type Key struct {
	Subject  string
	Resource string
	Issuer   string
}

// ErrNoToken is returned by TokenStore.Get when nothing is stored.
var ErrNoToken = errors.New("oauth: no token stored")

// TokenStore keeps tokens per Key. Implementations must be safe for
// concurrent use and must treat the tokens as credentials.
type TokenStore interface {
	// Get returns the token for the key. An empty key.Issuer matches any
	// issuer (the most recently stored token for the subject and
	// resource). ErrNoToken when there is none.
	Get(ctx context.Context, key Key) (*Token, Key, error)
	// Put stores the token, replacing the one under the same key.
	Put(ctx context.Context, key Key, tok *Token) error
	// Delete removes the tokens matching the key; an empty Issuer matches
	// any issuer. Deleting nothing is not an error.
	Delete(ctx context.Context, key Key) error
	// List returns the keys stored, with their tokens.
	List(ctx context.Context) ([]Entry, error)
}

// Entry is one stored token.
type Entry struct {
	Key   Key
	Token *Token
	Saved time.Time
}

// MemoryStore is a TokenStore in memory, for libraries and tests. A
// lookup costs the same with one subject or a million.
type MemoryStore struct {
	mu      sync.Mutex
	entries map[memKey][]Entry // by subject and resource; one per issuer
	now     func() time.Time
}

type memKey struct{ subject, resource string }

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{entries: map[memKey][]Entry{}, now: time.Now} }

// Get implements TokenStore.
func (s *MemoryStore) Get(_ context.Context, key Key) (*Token, Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := find(s.entries[memKey{key.Subject, key.Resource}], key)
	if !ok {
		return nil, Key{}, ErrNoToken
	}
	return copyToken(e.Token), e.Key, nil
}

// Put implements TokenStore.
func (s *MemoryStore) Put(_ context.Context, key Key, tok *Token) error {
	if key.Issuer == "" || key.Resource == "" {
		return errors.New("oauth: a token key needs a resource and an issuer")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	mk := memKey{key.Subject, key.Resource}
	s.entries[mk] = put(s.entries[mk], Entry{Key: key, Token: copyToken(tok), Saved: s.now()})
	return nil
}

// Delete implements TokenStore.
func (s *MemoryStore) Delete(_ context.Context, key Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	mk := memKey{key.Subject, key.Resource}
	if left := remove(s.entries[mk], key); len(left) > 0 {
		s.entries[mk] = left
	} else {
		delete(s.entries, mk)
	}
	return nil
}

// List implements TokenStore.
func (s *MemoryStore) List(_ context.Context) ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Entry
	for _, es := range s.entries {
		for _, e := range es {
			out = append(out, Entry{Key: e.Key, Token: copyToken(e.Token), Saved: e.Saved})
		}
	}
	return out, nil
}

func copyToken(t *Token) *Token {
	if t == nil {
		return nil
	}
	c := *t
	c.Scopes = slices.Clone(t.Scopes)
	return &c
}

func matches(k, want Key) bool {
	return k.Subject == want.Subject && k.Resource == want.Resource &&
		(want.Issuer == "" || sameIssuer(k.Issuer, want.Issuer))
}

// find returns the newest entry matching key.
func find(entries []Entry, key Key) (Entry, bool) {
	var best Entry
	found := false
	for _, e := range entries {
		if matches(e.Key, key) && (!found || !e.Saved.Before(best.Saved)) {
			best, found = e, true
		}
	}
	return best, found
}

func put(entries []Entry, e Entry) []Entry {
	for i := range entries {
		if entries[i].Key == e.Key {
			entries[i] = e
			return entries
		}
	}
	return append(entries, e)
}

func remove(entries []Entry, key Key) []Entry {
	return slices.DeleteFunc(entries, func(e Entry) bool { return matches(e.Key, key) })
}

// scopeString joins scopes for a request.
func scopeString(scopes []string) string { return strings.Join(scopes, " ") }

// unionScopes returns a's scopes followed by those of b not in a.
func unionScopes(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}
