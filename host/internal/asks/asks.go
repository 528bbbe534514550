// Package asks owns what a turn is told of an approval: the
// approval_requested event (a person asked, or nobody could be, with the
// fix), the approval event of the workflow's answer, the risk level a
// person is shown and the text of a refusal's outcome. The host's gate
// and task-question paths both build their events here.
package asks

import (
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/event"
)

// Call is the call an approval event is about.
type Call struct {
	Step                int
	CallID, ExposedName string
	Server, Tool        string
	// TaskID is the task whose question is asked ("" for a call's own
	// approval).
	TaskID string
}

// NoApproverFix is what an approval_requested event says when an ask found
// nobody to answer it and the gate gave no more specific explanation.
const NoApproverFix = "nobody can answer an approval here (no terminal, --approve deny, or too few approvers for this call); " +
	"answer asks with --approve prompt on a terminal, or --approve wait with approvals.store so approvers can vote (`agenthost approvals`), or change the rule that asks (docs/config.md)"

// Requested is the approval_requested event of a person asked: with the
// request's id and deadline.
func Requested(c Call, req *approvals.Request) event.Event {
	c.Server, c.Tool = req.Server, req.Tool
	return requested(c, req.Risk, req.ID, req.Deadline, req.Approvers, "")
}

// NobodyAsked is the approval_requested event of an ask the gate refused
// because nobody could answer it, without asking anyone (not a remembered
// denial), with the fix; ok is false for any other answer.
func NobodyAsked(c Call, res approvals.Result) (e event.Event, ok bool) {
	if res.Decision.Action != rules.ActionAsk || res.RequestID != "" || res.Remembered || res.Reason != rules.ReasonNoApprover {
		return event.Event{}, false
	}
	fix := res.Explanation
	if fix == "" {
		fix = NoApproverFix
	}
	return requested(c, res.Decision.Risk, "", time.Time{}, res.Decision.Approvers, fix), true
}

// requested is the approval_requested event of a call: with an id and a
// deadline when a person is asked, else with the fix (nobody can be).
func requested(c Call, eff risk.Effective, id string, deadline time.Time, approvers int, fix string) event.Event {
	e := event.Event{Type: event.ApprovalRequested, Step: c.Step, CallID: c.CallID, ExposedName: c.ExposedName,
		Server: c.Server, Tool: c.Tool, RiskLevel: ShownRiskLevel(eff), ApprovalID: id, Approvers: &approvers, Explanation: fix,
		TaskID: c.TaskID}
	if !deadline.IsZero() {
		e.Deadline = deadline.UTC().Format(time.RFC3339Nano)
	}
	return e
}

// Answered is the approval event of the workflow's answer.
func Answered(c Call, res approvals.Result) event.Event {
	approvers := res.Decision.Approvers
	return event.Event{Type: event.Approval, Step: c.Step, CallID: c.CallID, ExposedName: c.ExposedName,
		Server: c.Server, Tool: c.Tool, Decision: string(res.Decision.Action), Outcome: string(res.Outcome),
		Approvers: &approvers, Explanation: res.Explanation, TaskID: c.TaskID}
}

// ShownRiskLevel is the risk level a person is shown: "unclassified"
// where nobody classified it (the fail-closed bucket's "critical" is what
// rules and the audit see, not what the tool was found to be).
func ShownRiskLevel(e risk.Effective) string {
	if e.Unclassified && e.Source.RiskLevel == risk.SourceDefault {
		return "unclassified"
	}
	return string(e.RiskLevel)
}

// OutcomeText is what a refused call's error says of the outcome.
func OutcomeText(res approvals.Result) string {
	switch res.Outcome {
	case rules.OutcomeTrustDenied:
		return "denied: the session's trust level is too low"
	case rules.OutcomeDeniedByRule:
		return "denied by policy"
	case rules.OutcomeExpired:
		return "approval timed out"
	case rules.OutcomeRejected:
		return fmt.Sprintf("not approved (%s)", res.Reason)
	default:
		return string(res.Outcome)
	}
}
