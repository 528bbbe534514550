package rules

// Action is what the policy decides for a call.
type Action string

// Policy actions; combining takes the most restrictive (deny > ask > allow).
const (
	ActionAllow Action = "allow"
	ActionAsk   Action = "ask"
	ActionDeny  Action = "deny"
)

var actionOrder = []Action{ActionAllow, ActionAsk, ActionDeny}

// Outcome is the final result of gating one call, as written to the audit
// log.
type Outcome string

// Outcomes. The last three are set by the host for calls that never reach
// an approval decision.
const (
	OutcomeAutoAllowed      Outcome = "auto_allowed"
	OutcomeGranted          Outcome = "granted"
	OutcomeApproved         Outcome = "approved"
	OutcomeRejected         Outcome = "rejected"
	OutcomeExpired          Outcome = "expired"
	OutcomeDeniedByRule     Outcome = "denied_by_rule"
	OutcomeTrustDenied      Outcome = "trust_denied"
	OutcomeBindingFailed    Outcome = "binding_failed"
	OutcomeInjectionBlocked Outcome = "injection_blocked"
	OutcomeError            Outcome = "error"
)

// Allowed reports whether the outcome lets the call run.
func (o Outcome) Allowed() bool {
	switch o {
	case OutcomeAutoAllowed, OutcomeGranted, OutcomeApproved:
		return true
	}
	return false
}

// ReasonClass is the kind of reason a call did not run, the only part of a
// denial the model is told besides operator-written notes.
type ReasonClass string

// Reason classes.
const (
	ReasonPolicy     ReasonClass = "policy"
	ReasonDeclined   ReasonClass = "declined"
	ReasonTimeout    ReasonClass = "timeout"
	ReasonTrust      ReasonClass = "trust"
	ReasonNoApprover ReasonClass = "no_approver"
	ReasonError      ReasonClass = "error"
)
