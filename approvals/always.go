package approvals

// AlwaysBar is why an answer "always" (an allow rule for every call of the
// request's tool, kept past the session) would not take effect for a
// request: AlwaysAllowed when it would, and it is then offered.
type AlwaysBar int

const (
	// AlwaysAllowed: an allow rule for the tool would take effect.
	AlwaysAllowed AlwaysBar = iota
	// AlwaysUnclassified: the tool is unclassified (classify it first).
	AlwaysUnclassified
	// AlwaysNeedsApprovers: the tool needs more than one approver, which
	// one person's answer cannot give.
	AlwaysNeedsApprovers
	// AlwaysRuleAsks: a rule made the call ask (Request.Rules), and rules
	// combine deny > ask > allow: an allow rule cannot lift its ask.
	AlwaysRuleAsks
	// AlwaysNotGrantable: no grant is possible for this call (it is not
	// Request.SessionGrantable: a tool with no definition hash, or a call
	// the escalators tightened).
	AlwaysNotGrantable
)

// AlwaysBar is why an answer "always" would not take effect for r, in the
// order a person is told (AlwaysAllowed when it would).
func (r *Request) AlwaysBar() AlwaysBar {
	switch {
	case r.Unclassified:
		return AlwaysUnclassified
	case r.Approvers > 1:
		return AlwaysNeedsApprovers
	case len(r.Rules) > 0:
		return AlwaysRuleAsks
	case !r.SessionGrantable:
		return AlwaysNotGrantable
	}
	return AlwaysAllowed
}
