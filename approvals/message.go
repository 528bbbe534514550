package approvals

import (
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/rules"
)

// maxNoteRunes caps an approver's or operator's note quoted to the model.
const maxNoteRunes = 200

// ModelMessage is the tool result text the model gets for a call that did
// not run. It says the call was not executed, the class of reason, and not
// to retry the same call. It never names rules, approvers or other policy
// internals; the only free text is a note written by a person for this
// purpose (an approver's deny note, or the message of the rule that
// denied), with control characters stripped, whitespace collapsed and cut
// to 200 characters. An empty reason is derived from the outcome. Allowed
// outcomes give "".
func ModelMessage(outcome rules.Outcome, reason rules.ReasonClass, note string) string {
	if outcome.Allowed() {
		return ""
	}
	if reason == "" {
		reason = reasonFor(outcome)
	}
	var why, label string
	switch reason {
	case rules.ReasonPolicy:
		why, label = "the host's approval policy does not allow it", "Policy note"
	case rules.ReasonDeclined:
		why, label = "an approver declined it", "Approver note"
	case rules.ReasonTimeout:
		why = "the approval request timed out before anyone approved it"
	case rules.ReasonTrust:
		why = "this session's trust level is too low for this tool"
	case rules.ReasonNoApprover:
		why = "no approver was available to approve it"
	default:
		why = "the approval step failed"
	}
	var b strings.Builder
	b.WriteString("The tool call was not executed: ")
	b.WriteString(why)
	b.WriteString(".")
	if note = norm.OneLine(note, maxNoteRunes); note != "" && label != "" {
		b.WriteString(" " + label + ": \"" + note + "\".")
	}
	b.WriteString(" Do not retry the same call; continue without it or ask the user how to proceed.")
	return b.String()
}

func reasonFor(o rules.Outcome) rules.ReasonClass {
	switch o {
	case rules.OutcomeDeniedByRule:
		return rules.ReasonPolicy
	case rules.OutcomeRejected:
		return rules.ReasonDeclined
	case rules.OutcomeExpired:
		return rules.ReasonTimeout
	case rules.OutcomeTrustDenied:
		return rules.ReasonTrust
	}
	return rules.ReasonError
}
