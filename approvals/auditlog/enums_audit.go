package auditlog

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
