package approvals

import (
	"errors"
	"sync"
)

// ErrGrantNotAllowed: session grants are never given for tools that need
// two or more approvers, nor without a definition hash.
var ErrGrantNotAllowed = errors.New("session grant not allowed")

// Grants are one session's "allow for this session" answers, keyed by
// server, tool and the hash of the tool definition: a grant is void as soon
// as the definition changes. Safe for concurrent use.
type Grants struct {
	mu sync.Mutex
	m  map[grantKey]string // -> definition hash
}

type grantKey struct{ server, tool string }

// NewGrants returns an empty grant store.
func NewGrants() *Grants { return &Grants{m: map[grantKey]string{}} }

// Grant allows the tool for the rest of the session. It refuses tools
// needing two or more approvers and an empty hash.
func (g *Grants) Grant(server, tool, defHash string, approvers int) error {
	if approvers >= 2 || defHash == "" {
		return ErrGrantNotAllowed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m[grantKey{server, tool}] = defHash
	return nil
}

// Allowed reports whether a grant covers this exact definition. A grant
// for an older definition is dropped.
func (g *Grants) Allowed(server, tool, defHash string) bool {
	if defHash == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := grantKey{server, tool}
	h, ok := g.m[k]
	if ok && h != defHash {
		delete(g.m, k)
		return false
	}
	return ok
}

// Revoke drops the grant for a tool.
func (g *Grants) Revoke(server, tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, grantKey{server, tool})
}

// Len reports how many grants are held.
func (g *Grants) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}
