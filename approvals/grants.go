package approvals

import (
	"errors"
	"slices"
	"sync"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// errGrantNotAllowed: session grants are never given for tools that need
// two or more approvers, nor without a definition hash.
var errGrantNotAllowed = errors.New("session grant not allowed")

// sessionGrants are one session's "allow for this session" answers, keyed by
// server, tool and the hash of the tool definition: a grant is void as soon
// as the definition changes. A grant also covers at most the risk it was
// given for: a later call whose arguments raise the effective risk (force,
// cascade, a "*" namespace) is not covered and is asked again. Safe for
// concurrent use.
type sessionGrants struct {
	mu sync.Mutex
	m  map[grantKey]grant
}

type grant struct {
	defHash string
	// ceiling is the effective risk (after the call-time escalators) of the
	// call the grant was given on.
	ceiling risk.Effective
}

type grantKey struct{ server, tool string }

// newSessionGrants returns an empty grant store.
func newSessionGrants() *sessionGrants { return &sessionGrants{m: map[grantKey]grant{}} }

// Grant allows the tool for the rest of the session, for calls whose
// effective risk is no higher than risk (the approved call's, after the
// call-time escalators). It refuses tools needing two or more approvers and
// an empty hash. A new grant replaces the tool's previous one.
func (g *sessionGrants) Grant(server, tool, defHash string, approvers int, risk risk.Effective) error {
	if approvers >= 2 || defHash == "" {
		return errGrantNotAllowed
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.m[grantKey{server, tool}] = grant{defHash: defHash, ceiling: risk.Normalize()}
	return nil
}

// Allowed reports whether a grant covers this exact definition at this
// effective risk (a Decision's Risk: normalised, after the escalators). A grant for an older definition is dropped; one given for
// a lower risk stays for the calls it covers.
func (g *sessionGrants) Allowed(server, tool, defHash string, risk risk.Effective) bool {
	if defHash == "" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := grantKey{server, tool}
	gr, ok := g.m[k]
	if ok && gr.defHash != defHash {
		delete(g.m, k)
		return false
	}
	return ok && riskWithin(risk, gr.ceiling)
}

// riskWithin reports whether e is nowhere more restrictive than ceiling:
// every ordered field ranks no higher (an unknown value ranks highest),
// minTrustLevel is no higher, and every side effect of e is one of
// ceiling's. e is a Decision's Risk, already normalised; it is not
// normalised again, to keep granted calls free of allocations.
func riskWithin(e, ceiling risk.Effective) bool {
	trust, _ := risk.NormalizeTrust(e.MinTrustLevel)
	if norm.Rank(risk.CategoryOrder, e.Category) > norm.Rank(risk.CategoryOrder, ceiling.Category) ||
		norm.Rank(risk.RiskOrder, e.RiskLevel) > norm.Rank(risk.RiskOrder, ceiling.RiskLevel) ||
		norm.Rank(risk.BlastOrder, e.BlastRadius) > norm.Rank(risk.BlastOrder, ceiling.BlastRadius) ||
		norm.Rank(risk.ReversibilityOrder, e.Reversibility) > norm.Rank(risk.ReversibilityOrder, ceiling.Reversibility) ||
		norm.Rank(risk.ApprovalOrder, e.ApprovalRecommendation) > norm.Rank(risk.ApprovalOrder, ceiling.ApprovalRecommendation) ||
		trust > ceiling.MinTrustLevel {
		return false
	}
	for _, s := range e.SideEffects {
		if !slices.Contains(ceiling.SideEffects, s) {
			return false
		}
	}
	return true
}

// Revoke drops the grant for a tool.
func (g *sessionGrants) Revoke(server, tool string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.m, grantKey{server, tool})
}

// Len reports how many grants are held.
func (g *sessionGrants) Len() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.m)
}
