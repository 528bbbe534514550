package approvals

import "strings"

// Category is the SEP-2793 action category of a tool.
type Category string

// Categories, least to most restrictive.
const (
	CategoryRead    Category = "read"
	CategoryObserve Category = "observe"
	CategoryUtility Category = "utility"
	CategoryMutate  Category = "mutate"
	CategoryDelete  Category = "delete"
	CategoryDestroy Category = "destroy"
)

// RiskLevel is the SEP-2793 graded risk of a tool.
type RiskLevel string

// Risk levels, least to most restrictive.
const (
	RiskLow      RiskLevel = "low"
	RiskMedium   RiskLevel = "medium"
	RiskHigh     RiskLevel = "high"
	RiskCritical RiskLevel = "critical"
)

// BlastRadius is the SEP-2793 scope of an undesired outcome.
type BlastRadius string

// Blast radii, narrowest to widest.
const (
	BlastItem         BlastRadius = "item"
	BlastNamespace    BlastRadius = "namespace"
	BlastCluster      BlastRadius = "cluster"
	BlastOrganization BlastRadius = "organization"
	BlastGlobal       BlastRadius = "global"
)

// Reversibility says whether a tool's effect can be undone.
type Reversibility string

// Reversibility values, least to most restrictive.
const (
	ReversibleAuto   Reversibility = "auto"
	ReversibleManual Reversibility = "manual"
	ReversibleNone   Reversibility = "none"
)

// ApprovalRecommendation is the SEP-2793 advisory approval hint.
type ApprovalRecommendation string

// Approval recommendations, least to most restrictive.
const (
	ApprovalNone   ApprovalRecommendation = "none"
	ApprovalSingle ApprovalRecommendation = "single"
	ApprovalMulti  ApprovalRecommendation = "multi"
)

// Trust levels bound the SEP-2793 1..5 trust ladder. They are the one
// statement of the bounds: configuration validation and the CLI's --trust
// check use them (and ValidTrustLevel).
const (
	MinTrust = 1
	MaxTrust = 5
)

// ValidTrustLevel reports whether t is on the trust ladder (MinTrust to
// MaxTrust).
func ValidTrustLevel(t int) bool { return t >= MinTrust && t <= MaxTrust }

// The orders below define "more restrictive": a later value is riskier.
// Putting utility above observe and below mutate keeps every non-mutating
// category under every mutating one.
var (
	categoryOrder      = []Category{CategoryRead, CategoryObserve, CategoryUtility, CategoryMutate, CategoryDelete, CategoryDestroy}
	riskOrder          = []RiskLevel{RiskLow, RiskMedium, RiskHigh, RiskCritical}
	blastOrder         = []BlastRadius{BlastItem, BlastNamespace, BlastCluster, BlastOrganization, BlastGlobal}
	reversibilityOrder = []Reversibility{ReversibleAuto, ReversibleManual, ReversibleNone}
	approvalOrder      = []ApprovalRecommendation{ApprovalNone, ApprovalSingle, ApprovalMulti}
)

// rank is the position of v in order; anything unknown ranks as the most
// restrictive value, which is what normalisation turns it into.
func rank[T ~string](order []T, v T) int {
	for i, o := range order {
		if o == v {
			return i
		}
	}
	return len(order) - 1
}

func known[T ~string](order []T, v T) bool {
	for _, o := range order {
		if o == v {
			return true
		}
	}
	return false
}

// normEnum returns v if it is a known value, else the most restrictive one.
func normEnum[T ~string](order []T, v T) T {
	if known(order, v) {
		return v
	}
	return order[len(order)-1]
}

func maxEnum[T ~string](order []T, a, b T) T {
	if rank(order, b) > rank(order, a) {
		return normEnum(order, b)
	}
	return normEnum(order, a)
}

// raiseBy moves v up by steps, stopping at the most restrictive value.
func raiseBy[T ~string](order []T, v T, steps int) T {
	i := rank(order, v) + steps
	if i >= len(order) {
		i = len(order) - 1
	}
	return order[i]
}

// wantList renders the allowed values for error messages:
// "low, medium, high or critical".
func wantList[T ~string](order []T) string {
	parts := make([]string, len(order))
	for i, o := range order {
		parts[i] = string(o)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// rank reports c's position from least (0) to most restrictive.
func (c Category) rank() int { return rank(categoryOrder, c) }

// rank reports r's position from least (0) to most restrictive.
func (r RiskLevel) rank() int { return rank(riskOrder, r) }

// rank reports b's position from narrowest (0) to widest.
func (b BlastRadius) rank() int { return rank(blastOrder, b) }

// minApprovers is the least number of distinct approvers an ask needs under
// this recommendation. "none" still needs one: it only says the operator's
// rules may allow without asking, and an ask with zero approvers would be an
// allow in disguise.
func (a ApprovalRecommendation) minApprovers() int {
	if normEnum(approvalOrder, a) == ApprovalMulti {
		return 2
	}
	return 1
}

// Source says where one effective metadata field came from.
type Source string

// Provenance values, in order of authority.
const (
	SourceCatalogue Source = "catalogue"
	SourceDeclared  Source = "declared"
	SourceInferred  Source = "inferred"
	SourceDefault   Source = "default"
)

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

// ResultKind is what happened to the call after the decision, for audit.
type ResultKind string

// Audit result values.
const (
	ResultOK          ResultKind = "ok"
	ResultToolError   ResultKind = "tool_error"
	ResultServerError ResultKind = "server_error"
	ResultNotExecuted ResultKind = "not_executed"
	// ResultUnknown is the result of a durable call that was sent before
	// its process stopped and whose result was lost: it may or may not
	// have run, and it was not sent again.
	ResultUnknown ResultKind = "unknown"
	// ResultPending is the result of a decision record whose call is about
	// to be sent; the call's result record (same callId) follows.
	ResultPending ResultKind = "pending"
)

// Phase says which of a call's audit records a line is. A call that is
// refused has one record, phase decision, result not_executed. A call that
// runs has two with the same callId: phase decision (result pending),
// written before the call is sent, and phase result, written after it
// returns. The file sink also writes lines of phase gap (see Gap).
type Phase string

// Audit record phases.
const (
	PhaseDecision Phase = "decision"
	PhaseResult   Phase = "result"
	PhaseGap      Phase = "gap"
)
