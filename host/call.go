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
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/progress"
	"github.com/agenthost/agenthost/host/internal/results"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/host/internal/verdicts"
	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/failpoint"
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
}

// taskEvent is the tool_task event of a call's task update (the turn's
// emit masks the server's words, redactEvent).
func taskEvent(info callInfo, server, tool string, u mcpconn.TaskUpdate) Event {
	return Event{Type: EventToolTask, Step: info.step, CallID: info.id, ExposedName: info.exposedName,
		Server: server, Tool: tool, TaskID: u.TaskID, TaskStatus: u.Status, StatusMessage: u.StatusMessage}
}

// lookupStage finds what the call is for: its server and its arguments
// object (once), and the tool the server offers now (again each time the
// call is decided again).
type lookupStage struct{ next stage }

func (st lookupStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if c.conn == nil {
		conn, ok := c.s.host.conns[c.server]
		if !ok {
			return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrUnknownServer, "unknown server %q", c.server)
		}
		arguments, err := decodeArguments(c.args)
		if err != nil {
			return nil, hosterr.New(KindToolError, hosterr.MsgNotJSONObject(err),
				err, "invalid arguments for %s/%s: %v", c.server, c.tool, err)
		}
		c.conn, c.arguments = conn, arguments
	}
	snap, ct, err := c.conn.Lookup(ctx, c.tool)
	if ct, err = c.s.offered(c.conn, c.tool, snap, ct, err); err != nil {
		return nil, err
	}
	c.ct = ct
	c.decisions++
	return st.next.serve(ctx, c)
}

// guardStage refuses arguments that name a secure parameter or repeat a
// key, and model arguments that hold a protected value.
type guardStage struct{ next stage }

func (st guardStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if r := c.s.guard(c); r != nil {
		return nil, r
	}
	return st.next.serve(ctx, c)
}

// guard is the guard stage's decision: nil lets the call on.
func (s *Session) guard(c *call) *refusal {
	server, tool := c.server, c.ct.Tool.Name
	if err := c.ct.Tool.CheckArguments(c.args); err != nil {
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

// schemaStage checks the arguments against the tool's inputSchema (when
// the call asks for it). After the guard, so the validator's message
// (which quotes the arguments) never echoes a secure name back to the
// model.
type schemaStage struct{ next stage }

func (st schemaStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if err := c.s.host.checkSchema(c); err != nil {
		return nil, err
	}
	return st.next.serve(ctx, c)
}

// checkSchema is the schema stage's decision: nil lets the call on.
func (h *Host) checkSchema(c *call) error {
	if !c.info.checkSchema {
		return nil
	}
	t := c.ct.Tool
	if err := h.args.Validate(verdicts.Input(c.ct), t.InputSchema, t.ValidationCost(), c.arguments); err != nil {
		return hosterr.New(KindToolError, hosterr.MsgSchemaInvalid(err), err, "invalid arguments for %s/%s: %v", c.server, c.tool, err)
	}
	return nil
}

// resolveStage resolves, coerces and validates the secure values of a call
// the gate allowed; a failure refuses it (binding_failed).
type resolveStage struct{ next stage }

func (st resolveStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	secure, err := c.s.secureArgs(ctx, c.server, c.ct.Tool)
	if err != nil {
		return nil, &refusal{outcome: rules.OutcomeBindingFailed, rec: c.rec, err: err}
	}
	c.secure = secure
	return st.next.serve(ctx, c)
}

// auditDecision writes a decision record before what it decides is sent;
// a failed write refuses the send.
func (h *Host) auditDecision(ctx context.Context, server, tool string, rec *auditlog.Record) error {
	if err := h.writeAudit(ctx, rec); err != nil {
		h.logger.Error("audit write failed; the call was not sent", "server", server, "tool", tool, "err", err)
		return hosterr.New(KindInternal, hosterr.MsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, err),
			"%s/%s: refused, the call was not sent: its audit record could not be written: %v", server, tool, err)
	}
	return nil
}

// auditStage writes the call's decision record before the call is sent,
// and its result record before the result goes back: no un-audited
// execution, and a failed write refuses the call (or withholds its
// result).
//
// The decision holds for the definition it was made under. Approvers may
// take minutes, and the server may change the tool meanwhile (to a destroy
// with global blast radius, say): the catalog is checked again here, after
// the decision and the secure values resolved for it, and a changed
// definition's decision is audited as not executed and the call decided
// again from the start (redecide), at most maxRedecisions times.
type auditStage struct {
	redecide stage
	next     stage
}

func (st *auditStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	h := c.s.host
	changed := h.stale(c)
	if err := h.auditDecision(ctx, c.server, c.tool, c.rec); err != nil {
		return nil, err
	}
	if changed {
		if c.decisions == maxRedecisions {
			return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrToolUnavailable,
				"%s/%s: the tool's definition changed %d times while its call was being decided; not sent", c.server, c.tool, c.decisions)
		}
		return st.redecide.serve(ctx, c)
	}
	c.start = time.Now()
	res, err := st.next.serve(ctx, c)
	done := h.resultRecord(c, res, err)
	werr := h.writeAudit(ctx, &done)
	return h.resultOutcome(c, res, err, werr)
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
// a copy of the decision record (the sink may keep that one). A call that
// was not sent after all (resultKind not_executed) has its decision
// record written again as not executed instead.
func (h *Host) resultRecord(c *call, result *CallResult, err error) auditlog.Record {
	done := *c.rec
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

// redactStage hands on the server's answer: the result with any secret the
// server echoed masked and its labels read (from the result as the server
// sent it: redaction may withhold a _meta, never a label), or the failure
// as an *Error of the right Kind.
type redactStage struct{ next stage }

func (st redactStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	h := c.s.host
	out, err := st.next.serve(ctx, c)
	if err != nil {
		return nil, hosterr.FromCall(h.redactor, c.server, c.ct.Tool.Name, c.secure != nil, err)
	}
	raw := out.Result
	out.Labels = results.Labels(h.effective(c.server, c.ct), raw)
	out.Result = results.Redact(h.redactor, raw)
	return out, nil
}

// sendStage sends the call: each tools/call attempt (the one retry
// mcpconn says the server's answer allows included) under its own MCP
// request span, with the call's task updates and progress forwarded to
// the turn. It answers the result as the server sent it (the redact stage
// masks it) or mcpconn's error.
type sendStage struct{ obs Observer }

func (st sendStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	req := mcpconn.CallRequest{Tool: c.ct.Tool, Arguments: c.arguments, Secure: c.secure, Meta: c.meta}
	if dc := c.info.durable; dc != nil {
		// The task an earlier send created is followed, not sent again;
		// a task is left running when the process stops.
		req.Task, req.KeepTask = dc.task, detached
	}
	if dc, emit := c.info.durable, c.info.emit; dc != nil || emit != nil {
		req.OnTask = func(u mcpconn.TaskUpdate) {
			if dc != nil {
				c.s.host.recordTask(ctx, dc, u.TaskID)
			}
			if emit != nil {
				emit(taskEvent(c.info, c.server, c.tool, u))
			}
		}
	}
	if c.conn.TasksOn() { // only a task asks questions: no closure per call otherwise
		req.Decide = func(ctx context.Context, q mcpconn.TaskQuestion) (bool, error) {
			return c.s.decideTaskQuestion(ctx, c.server, c.ct, c.args, c.info, q)
		}
	}
	var fwd *progress.Forwarder
	if c.info.emit != nil {
		fwd = progress.Start(c.info.emit, Event{Type: EventToolProgress, Step: c.info.step, CallID: c.info.id,
			ExposedName: c.info.exposedName, Server: c.server, Tool: c.tool}, c.start)
		req.Progress = fwd.Notify
	}
	var (
		result *mcp.CallToolResult
		sent   *mcpconn.SecureArgs
		err    error
	)
	base := req.Meta
	for retried := false; ; retried = true {
		actx, end := ctx, (func(*mcp.CallToolResult, error))(nil)
		if st.obs != nil && req.Task == "" {
			actx, req.Meta, end = c.s.host.startAttempt(ctx, st.obs, c.server, req.Tool.Name, c.conn.Attempt(), base)
		}
		result, sent, err = c.conn.Call(actx, req)
		if end != nil {
			end(result, err)
		}
		again := retryOf(err, retried)
		if again == mcpconn.RetryRenewed {
			if fresh, rerr := c.s.renewSecure(ctx, c.server, req.Tool); rerr == nil && fresh != nil {
				req.Secure = fresh
			} else {
				again = mcpconn.RetryNone
			}
		}
		if again == mcpconn.RetryNone {
			break
		}
	}
	fwd.Stop()
	if c.info.durable != nil {
		failpoint.Hit(failpoint.DurableAfterSend)
	}
	if err != nil {
		return nil, err
	}
	return &CallResult{Server: c.server, Tool: req.Tool.Name, Result: result, SecureParams: sent.Names()}, nil
}

// retryOf is how an attempt that ended with err may be sent once more: as
// mcpconn says, and only once (retried: this was the retry).
func retryOf(err error, retried bool) mcpconn.Retry {
	var ce *mcpconn.CallError
	if err == nil || retried || !errors.As(err, &ce) {
		return mcpconn.RetryNone
	}
	return ce.Retry
}

// decodeArguments checks that args is a JSON object (absent and null mean
// {}) and returns it as is: mcp-go sends the raw bytes, so the arguments
// are never decoded and re-encoded on the call path.
func decodeArguments(args json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(args)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(trimmed) {
		var v any
		err := json.Unmarshal(trimmed, &v)
		return nil, fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	if trimmed[0] != '{' {
		return nil, errors.New("arguments are not a JSON object")
	}
	return json.RawMessage(trimmed), nil
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

// secureArgs resolves, coerces and validates the tool's secure values
// (the session's cache of prepared values reused while they are the same);
// nil for a tool without secureInputSchema (it never gets
// secureArguments).
func (s *Session) secureArgs(ctx context.Context, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	if !t.HasSecureSchema {
		return nil, nil
	}
	h := s.host
	return s.prepared.Resolve(s.bindingContext(ctx), h.binder, s.scope(server, t), t, secureRequired(h.Server(server), t))
}

// renewSecure drops the session's cached secure values of the tool and
// resolves fresh ones for the one retry after the server rejected the
// host's values (an expired or revoked token, say).
func (s *Session) renewSecure(ctx context.Context, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	h := s.host
	for _, p := range t.SecureParams {
		scope := s.scope(server, t)
		scope.Param = p
		h.binder.Invalidate(scope)
	}
	fresh, err := s.secureArgs(ctx, server, t)
	if err == nil {
		h.logger.Info("server rejected the secure arguments; retrying once with freshly resolved values", "server", server, "tool", t.Name)
	}
	return fresh, err
}

// scope is what the binder resolves a secure value of the session's call
// of t for.
func (s *Session) scope(server string, t *secureparams.Tool) bindings.Scope {
	return bindings.Scope{SessionID: s.id, Subject: s.subject, Server: server, Tool: t.Name}
}
