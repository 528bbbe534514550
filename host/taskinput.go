package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// TaskQuestionRule is recorded among the rules of the decision a task's
// question asked for (the approval event's and the audit record's): the
// server's question, not a rule of the policy, raised the ask.
const TaskQuestionRule = "task-question"

// decideTaskQuestion answers a question a call's task asks that is a
// decision (mcpconn.TaskQuestion: confirm or decline) through the call's
// approval workflow: the session's gate asks its approvers (the terminal,
// serve's approvals API, a store-backed wait) about the call's server and
// tool, with the server's question as the request's message, as a
// PreToolUse hook's ask would (at least one approver, never a session
// grant; a rule that now denies the call declines the question unasked).
// The decision is audited (a decision record of the call whose rules end
// with TaskQuestionRule) before the answer goes to the server, and the
// turn is told with approval_requested and approval events that carry the
// task's id. A refusal the gate remembers is remembered for the same
// question of the same call, not for the call itself.
func (s *Session) decideTaskQuestion(ctx context.Context, server string, ct *CatalogTool, args json.RawMessage, info callInfo, q mcpconn.TaskQuestion) (bool, error) {
	h := s.host
	tool := ct.Tool.Name
	question := fmt.Sprintf("%s/%s asks, in its task: %s", server, tool, h.redactor.Redact(q.Message))
	check := approvals.Check{
		SessionID:    s.id,
		Subject:      s.subject,
		CallID:       info.id,
		Call:         s.policyCall(server, tool, args),
		Risk:         h.effective(server, ct),
		ToolDefHash:  questionKey(ct.Tool.DefHash(), q.Message),
		ExposedName:  info.exposedName,
		SecureParams: ct.Tool.SecureParams,
		Conversation: info.conversation,
	}
	check.Call.Tighten, check.Call.TightenBy, check.Call.TightenMessage = rules.ActionAsk, TaskQuestionRule, question
	check.Asking = func(req *approvals.Request) {
		// The question is what approvers decide, also where a rule of
		// the policy raised the ask with a message of its own.
		req.Message = question
		if info.emit != nil {
			e := approvalRequested(info, req.Server, req.Tool, req.Risk, req.ID, req.Deadline, req.Approvers, "")
			e.TaskID = q.TaskID
			info.emit(e)
		}
	}
	res, gateErr := s.gate.Check(ctx, check)
	if info.emit != nil {
		if nobodyAsked(res) {
			fix := res.Explanation
			if fix == "" {
				fix = noApproverFix
			}
			e := approvalRequested(info, server, tool, res.Decision.Risk, "", time.Time{}, res.Decision.Approvers, fix)
			e.TaskID = q.TaskID
			info.emit(e)
		}
		approvers := res.Decision.Approvers
		info.emit(Event{Type: EventApproval, Step: info.step, CallID: info.id, ExposedName: info.exposedName,
			Server: server, Tool: tool, Decision: string(res.Decision.Action), Outcome: string(res.Outcome),
			Approvers: &approvers, Explanation: res.Explanation, TaskID: q.TaskID})
	}
	rec := auditlog.NewRecord(check, res, time.Now())
	// The record names the definition the call runs under; the call is
	// running whatever the answer, and its result record follows.
	rec.ToolDefHash, rec.Result = ct.Tool.DefHash(), auditlog.ResultPending
	if err := h.auditDecision(ctx, server, tool, rec); err != nil {
		return false, err
	}
	if gateErr != nil {
		return false, fmt.Errorf("%s/%s: approval of its task's question failed: %w", server, tool, gateErr)
	}
	return res.Allowed(), nil
}

// questionKey stands for the tool's definition hash in the gate's check
// of a task's question, so that neither the call's session grant nor its
// remembered refusals answer the question, and a refused question is
// remembered for that question only.
func questionKey(defHash, question string) string {
	sum := sha256.Sum256([]byte(question))
	return defHash + "/" + TaskQuestionRule + "/" + hex.EncodeToString(sum[:8])
}
