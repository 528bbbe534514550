package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// ManagedRulePrefix starts the id of every rule that comes from a managed
// policy, in decisions and audit records: managed rule "no-prod" is
// "managed/no-prod". A user's rule id cannot start with it.
const ManagedRulePrefix = "managed/"

// Managed is the approvals part of an administrator's managed policy: what
// a user's configuration can add to but never relax.
//
//   - Rules are always evaluated besides the user's, so, since matching
//     rules combine deny > ask > allow, a user's rule can make a call
//     stricter but never less strict than the managed rules make it;
//   - Catalogue entries come before the user's: first match wins, so the
//     administrator's classification of a tool is the one used;
//   - Unclassified and NoMatch are floors: the user's value counts only when
//     it is stricter (unclassified: infer < ask < strict; noMatch: allow <
//     ask < deny);
//   - MaxTrustLevel caps every session's trust level (0: no cap).
type Managed struct {
	Unclassified  string           `json:"unclassified" yaml:"unclassified"`
	NoMatch       string           `json:"noMatch" yaml:"noMatch"`
	Catalogue     []CatalogueEntry `json:"catalogue" yaml:"catalogue"`
	Rules         []Rule           `json:"rules" yaml:"rules"`
	MaxTrustLevel int              `json:"maxTrustLevel" yaml:"maxTrustLevel"`
}

// unclassifiedOrder ranks the unclassified modes from the least to the
// most restrictive: infer lets a heuristic classify (and so allow), ask
// asks a person for every call, strict applies the fail-closed bucket.
var unclassifiedOrder = []string{UnclassifiedInfer, UnclassifiedAsk, UnclassifiedStrict}

// Validate reports every problem of the managed approvals, keyed like
// Config.Validate (relative to the approvals section of the managed file).
func (m *Managed) Validate() error {
	c := Config{Unclassified: m.Unclassified, NoMatch: m.NoMatch, Catalogue: m.Catalogue, Rules: m.Rules}
	var errs []error
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if m.MaxTrustLevel != 0 && !risk.ValidTrustLevel(m.MaxTrustLevel) {
		errs = append(errs, &risk.FieldError{Key: "maxTrustLevel", Msg: fmt.Sprintf("must be from %d to %d, got %d", risk.MinTrust, risk.MaxTrust, m.MaxTrustLevel)})
	}
	return errors.Join(errs...)
}

// merged is c with the managed approvals merged in (see Managed) and the
// trust ceiling (0: none); c itself is not changed. Both are valid.
func merged(c Config, m *Managed) (Config, int) {
	if m == nil {
		return c, 0
	}
	out := c
	if norm.Rank(unclassifiedOrder, risk.OrDefault(m.Unclassified, UnclassifiedInfer)) > norm.Rank(unclassifiedOrder, risk.OrDefault(c.Unclassified, UnclassifiedAsk)) {
		out.Unclassified = m.Unclassified
	}
	if norm.Rank(actionOrder, Action(risk.OrDefault(m.NoMatch, string(ActionAllow)))) > norm.Rank(actionOrder, Action(risk.OrDefault(c.NoMatch, string(ActionAsk)))) {
		out.NoMatch = m.NoMatch
	}
	out.Catalogue = append(slices.Clone(m.Catalogue), c.Catalogue...)
	out.Rules = make([]Rule, 0, len(m.Rules)+len(c.Rules))
	for _, r := range m.Rules {
		r.ID = ManagedRulePrefix + r.ID
		out.Rules = append(out.Rules, r)
	}
	out.Rules = append(out.Rules, c.Rules...)
	return out, m.MaxTrustLevel
}

// isManagedID reports a rule id in the managed namespace.
func isManagedID(id string) bool { return strings.HasPrefix(id, ManagedRulePrefix) }
