// Package taskq owns the answer to a question a call's task asks that is
// a decision (mcpconn.TaskQuestion: confirm or decline): the gate's check
// of the question, the turn's approval events, the decision record
// written before the answer goes to the server, and the key that keeps a
// question's answer apart from the call's own.
package taskq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/internal/asks"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// Rule is recorded among the rules of the decision a task's question
// asked for (the approval event's and the audit record's): the server's
// question, not a rule of the policy, raised the ask.
const Rule = "task-question"

// Key stands for the tool's definition hash in the gate's check of a
// task's question, so that neither the call's session grant nor its
// remembered refusals answer the question, and a refused question is
// remembered for that question only.
func Key(defHash, question string) string {
	sum := sha256.Sum256([]byte(question))
	return defHash + "/" + Rule + "/" + hex.EncodeToString(sum[:8])
}

// Asker is what answering a question needs of the host and session.
type Asker struct {
	Gate     *approvals.Gate
	Redactor *bindings.Redactor
	// Record writes the decision record; Refused is the error of a call
	// whose record could not be written.
	Record  auditlog.Sink
	Refused func(server, tool string, err error) error
	// Emit tells the turn (nil outside a turn).
	Emit func(event.Event)
	// Call is the call whose task asks.
	Call Call
}

// Call is the call whose task asks a question, read when the question
// comes.
type Call interface {
	// TaskCheck is the call's own check (the approval workflow's check of
	// the call, as the gate decided it), the hash of the definition the
	// call runs under, and the call as its approval events name it
	// (TaskID "").
	TaskCheck() (check approvals.Check, defHash string, ask asks.Call)
}

// Decide answers q through the call's approval workflow: the gate asks
// its approvers (the terminal, serve's approvals API, a store-backed wait)
// about the call (a.Call's check and definition hash), with the server's
// question as the request's message, as a PreToolUse
// hook's ask would (at least one approver, never a session grant; a rule
// that now denies the call declines the question unasked). The decision
// is audited (a decision record of the call whose rules end with Rule)
// before the answer goes to the server, and the turn is told with
// approval_requested and approval events that carry the task's id. A
// refusal the gate remembers is remembered for the same question of the
// same call, not for the call itself. Decide is an mcpconn.CallRequest's
// Decide as a method value.
func (a Asker) Decide(ctx context.Context, q mcpconn.TaskQuestion) (bool, error) {
	check, defHash, ask := a.Call.TaskCheck()
	server, tool := ask.Server, ask.Tool
	question := fmt.Sprintf("%s/%s asks, in its task: %s", server, tool, a.Redactor.Redact(q.Message))
	check.ToolDefHash = Key(defHash, q.Message)
	check.Call.Tighten, check.Call.TightenBy, check.Call.TightenMessage = rules.ActionAsk, Rule, question
	ask.TaskID = q.TaskID
	check.Asking = func(req *approvals.Request) {
		// The question is what approvers decide, also where a rule of
		// the policy raised the ask with a message of its own.
		req.Message = question
		if a.Emit != nil {
			a.Emit(asks.Requested(ask, req))
		}
	}
	res, gateErr := a.Gate.Check(ctx, check)
	if a.Emit != nil {
		if e, ok := asks.NobodyAsked(ask, res); ok {
			a.Emit(e)
		}
		a.Emit(asks.Answered(ask, res))
	}
	rec := auditlog.NewRecord(check, res, time.Now())
	// The record names the definition the call runs under; the call is
	// running whatever the answer, and its result record follows.
	rec.ToolDefHash, rec.Result = defHash, auditlog.ResultPending
	if err := a.Record.Write(ctx, rec); err != nil {
		return false, a.Refused(server, tool, err)
	}
	if gateErr != nil {
		return false, fmt.Errorf("%s/%s: approval of its task's question failed: %w", server, tool, gateErr)
	}
	return res.Allowed(), nil
}
