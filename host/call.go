package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/asks"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/host/internal/verdicts"
)

// CallResult is a tool call's outcome as the server returned it, after
// redaction of any secure value echoed back.
type CallResult struct {
	Server string
	Tool   string
	Result *mcp.CallToolResult
	// SecureParams are the names of the secure parameters sent (never
	// values), sorted. Read-only: the slice is shared with the session's
	// other calls of the tool (copy it before changing it).
	SecureParams []string
	// Decision is the approval decision that let the call run (nil when no
	// approval workflow is configured).
	Decision *CallDecision
	// Labels are the result's labels (sensitive, untrusted) and what set
	// each: the server on the result (trust-annotations) or the tool's
	// declaration (action-metadata). The model is told them, the result's
	// audit record holds them, and the session's later rule expressions
	// read them (session.resultLabels).
	Labels []risk.ResultLabel
}

// CallDecision is the approval decision of one call, for output and audit.
type CallDecision struct {
	Decision  string   `json:"decision"`
	Outcome   string   `json:"outcome"`
	Approvers int      `json:"approvers"`
	Rules     []string `json:"rules"`
}

// IsError reports a tool execution error (isError: true).
func (r *CallResult) IsError() bool { return r != nil && r.Result != nil && r.Result.IsError }

// callInfo identifies a call within a turn, for events and audit.
type callInfo struct {
	id          string
	exposedName string
	step        int
	emit        func(Event) // nil outside a turn
	// checkSchema validates the arguments against inputSchema before
	// anything else happens (a model gets the validator's message and can
	// correct itself; CallTool's caller gets it as the error).
	checkSchema bool
	// fromModel marks the model's calls, whose arguments must not carry a
	// protected value (an operator's CallTool may).
	fromModel bool
	// durable is the call's part in a durable turn (nil: none).
	durable *durableCall
	// conversation is what the call's approvers are shown of the turn
	// (turn.conversation); empty outside a turn.
	conversation approvals.Conversation
	// argsCheck is the turn's check of the model's arguments (zero: none;
	// decodeArguments checks them).
	argsCheck rules.ArgsCheck
}

// ask is the call as its approval events name it (taskID "" for the
// call's own approval).
func (info callInfo) ask(server, tool, taskID string) asks.Call {
	return asks.Call{Step: info.step, CallID: info.id, ExposedName: info.exposedName, Server: server, Tool: tool, TaskID: taskID}
}

// taskEvent is the tool_task event of a call's task update (the turn's
// emit masks the server's words, mask.Event).
func taskEvent(info callInfo, server, tool string, u mcpconn.TaskUpdate) Event {
	return Event{Type: EventToolTask, Step: info.step, CallID: info.id, ExposedName: info.exposedName,
		Server: server, Tool: tool, TaskID: u.TaskID, TaskStatus: u.Status, StatusMessage: u.StatusMessage}
}

// guard is the args stage's first decision: nil lets the call on.
func (s *Session) guard(c *call) *refusal {
	server, tool := c.server, c.ct.Tool.Name
	// The call's check stands for the guard's own json.Valid when it holds
	// for the arguments as given; arguments with another space around them
	// (valid trimmed, not as given) are validated, and refused, as before.
	check := c.ct.Tool.CheckArguments
	if c.argsCheck.ValidAsGiven(c.args) {
		check = c.ct.Tool.CheckValidArguments
	}
	if err := check(c.args); err != nil {
		if errors.Is(err, ErrDuplicateKeyInArguments) {
			// Servers disagree on which of repeated values wins, and the
			// audit record could not say which one was meant.
			return &refusal{warn: "refused a call whose arguments repeat a key", outcome: rules.OutcomeInjectionBlocked,
				err: hosterr.New(KindToolError, hosterr.MsgDuplicateKey, err,
					"refused %s/%s: an object in the arguments repeats a key; nothing was sent", server, tool)}
		}
		return &refusal{warn: "refused a call whose arguments name a secure parameter (possible prompt injection)", outcome: rules.OutcomeInjectionBlocked,
			err: hosterr.New(KindBinding, hosterr.MsgInvalidArguments, err,
				"refused %s/%s: the arguments name a host-controlled (secure) parameter; nothing was sent", server, tool)}
	}
	// A model that learned a protected value (from a leak elsewhere, or a
	// user who pasted it) must not forward it to a server: refuse, audit,
	// and tell the model nothing about the value.
	if c.info.fromModel && s.host.redactor.ContainsSecretBytes(c.args) {
		return &refusal{warn: "refused a model call whose arguments hold a protected value (possible exfiltration)", outcome: rules.OutcomeInjectionBlocked,
			err: hosterr.New(KindBinding, hosterr.MsgSecretInArgs, ErrSecretInArguments,
				"refused %s/%s: the model's arguments hold a protected value; nothing was sent", server, tool)}
	}
	return nil
}

// checkSchema is the args stage's second decision: nil lets the call on.
func (h *Host) checkSchema(c *call) error {
	if !c.info.checkSchema {
		return nil
	}
	t := c.ct.Tool
	if err := h.args.Validate(verdicts.Input(c.ct), t.InputSchema, t.ValidationCost(), c.arguments, c.argsCheck); err != nil {
		return hosterr.New(KindToolError, hosterr.MsgSchemaInvalid(err), err, "invalid arguments for %s/%s: %v", c.server, c.tool, err)
	}
	return nil
}

// stale reports that the catalog no longer offers the tool as the call was
// decided for it; the decision record then says not executed.
func (h *Host) stale(c *call) bool {
	if !definitionChanged(c.ct, c.conn.Snapshot().Tool(c.tool)) {
		return false
	}
	h.logger.Warn("the tool's definition changed while its call was being decided; deciding again",
		"server", c.server, "tool", c.tool, "session", c.s.id, "decidedHash", c.ct.Tool.DefHash())
	c.rec.Result = auditlog.ResultNotExecuted
	return true
}

// resultRecord is the record written after a call ran: its result record,
// a copy of the decision record (Record.Copy; the sink may keep that one).
// A call that was not sent after all (resultKind not_executed) has its
// decision record written again as not executed instead.
func (h *Host) resultRecord(c *call, result *CallResult, err error) *auditlog.Record {
	done := c.rec.Copy()
	if c.resultKind == auditlog.ResultNotExecuted {
		done.Result = auditlog.ResultNotExecuted
		return done
	}
	if c.hookRule != "" {
		done.Rules = slices.Concat(c.rec.Rules, []string{c.hookRule})
	}
	done.Phase = auditlog.PhaseResult
	done.TS = time.Now().UTC()
	done.DurationMs = done.TS.Sub(c.start).Milliseconds()
	switch {
	case err != nil && KindOf(err) == KindBinding:
		done.Outcome = rules.OutcomeBindingFailed
		done.Result = auditlog.ResultServerError
	case err != nil:
		done.Result = auditlog.ResultServerError
	case result.IsError():
		done.Result = auditlog.ResultToolError
	default:
		done.Result = auditlog.ResultOK
	}
	if c.resultKind != "" {
		done.Result = c.resultKind
	}
	if result != nil {
		done.ResultLabels = result.Labels
	}
	return done
}

// resultOutcome is what a call that ran hands back once its result record
// was written (werr: the write's error). The record is written before the
// result goes back to the model; a failed write withholds the result (and
// the sink refuses later calls).
func (h *Host) resultOutcome(c *call, result *CallResult, err, werr error) (*CallResult, error) {
	if c.resultKind == auditlog.ResultNotExecuted {
		return nil, err
	}
	if werr != nil {
		h.logger.Error("audit write failed after the call ran", "server", c.server, "tool", c.tool, "err", werr)
		if err == nil {
			return nil, hosterr.New(KindInternal, hosterr.MsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, werr),
				"%s/%s: the call ran, but its result record could not be written to the audit log, so its result is withheld: %v", c.server, c.tool, werr)
		}
	}
	if err != nil {
		return nil, err
	}
	result.Decision = c.decision
	c.s.noteLabels(result.Labels)
	return result, nil
}

// decodeArguments checks that args is a JSON object (absent and null mean
// {}) and returns it as is: mcp-go sends the raw bytes, so the arguments
// are never decoded and re-encoded on the call path. It is the call's one
// validation of its arguments: the check it returns goes with them to the
// schema check, the gate's escalators and the audit records
// (rules.ArgsCheck), which then do not validate them again. checked is a
// check the caller already made (a turn's, for the tool_call event): used
// when it vouches for args, which are then not validated here either.
func decodeArguments(args json.RawMessage, checked rules.ArgsCheck) (json.RawMessage, rules.ArgsCheck, error) {
	check := checked
	trimmed, valid := check.Trimmed(args)
	if !valid {
		check = rules.CheckArgs(args)
		trimmed, valid = check.Trimmed(args)
	}
	if !valid {
		trimmed = bytes.TrimSpace(args)
		if len(trimmed) == 0 {
			return json.RawMessage("{}"), check, nil
		}
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, check, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if string(trimmed) == "null" {
		return json.RawMessage("{}"), check, nil
	}
	if trimmed[0] != '{' {
		return nil, check, errors.New("arguments are not a JSON object")
	}
	return json.RawMessage(trimmed), check, nil
}

// maxRedecisions bounds how often one call is decided again because the
// tool's definition changed while it was being decided.
const maxRedecisions = 3

// definitionChanged reports whether the catalog no longer offers decided as
// it was when the call was decided: the tool is gone, not active, or has
// another definition.
func definitionChanged(decided, current *CatalogTool) bool {
	switch {
	case current == nil || current.Status != ToolActive:
		return true
	case current == decided || current.Tool == decided.Tool:
		return false
	}
	return current.Tool.DefHash() != decided.Tool.DefHash()
}

// lookupTool finds an offered tool, connecting lazily and re-listing once
// when the tool is unknown.
func (s *Session) lookupTool(ctx context.Context, c *mcpconn.Conn, tool string) (*CatalogTool, error) {
	snap, ct, err := c.Lookup(ctx, tool)
	return s.offered(c, tool, snap, ct, err)
}

// offered is the tool a lookup found, if the session may call it: listed,
// active, holding no protected value, not hidden by a pin.
func (s *Session) offered(c *mcpconn.Conn, tool string, snap *ServerSnapshot, ct *CatalogTool, err error) (*CatalogTool, error) {
	if err != nil {
		return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, err, "%v", err)
	}
	server := c.Name()
	if ct == nil {
		note := ""
		if len(snap.Warnings) > 0 {
			note = " (" + strings.Join(snap.Warnings, "; ") + ")"
		}
		return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrToolUnavailable, "server %s has no tool %q%s", server, tool, note)
	}
	if ct.Status != ToolActive {
		return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, tool, ct.Status, ct.Reason)
	}
	if s.host.taint.Tainted(snap, ct) {
		return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, s.host.redactor.Redact(tool), ToolExcluded, taint.Reason)
	}
	if reason := s.host.taint.PinHidden(snap, ct); reason != "" {
		return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, tool, ToolHidden, reason)
	}
	return ct, nil
}
