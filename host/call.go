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
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
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
	Labels []approvals.ResultLabel
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

// CallTool runs one tool call for the session through the pipeline a
// model's call takes: it refuses arguments that name a secure parameter or
// do not match the tool's inputSchema, decides, resolves and validates the
// secure values, sends the call with secureArguments, and maps failures to
// a *Error of the right Kind.
func (s *Session) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (*CallResult, error) {
	return s.callTool(ctx, server, tool, args, callInfo{id: newCallID(), checkSchema: true})
}

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
	// tighten is the PreToolUse hooks' word on the call (host/hooks.go).
	tighten callTighten
	// durable is the call's part in a durable turn (nil: none).
	durable *durableCall
	// conversation is what the call's approvers are shown of the turn
	// (turn.conversation); empty outside a turn.
	conversation approvals.Conversation
}

func (s *Session) callTool(ctx context.Context, server, tool string, args json.RawMessage, info callInfo) (*CallResult, error) {
	obs := s.host.obs
	if obs == nil {
		return s.authorizedCall(ctx, server, tool, args, info)
	}
	// Names as the operator typed them or the model sent them: masked like
	// everything else that leaves the host.
	r := s.host.redactor
	ctx, end := obs.StartToolCall(ctx, ToolCallInfo{SessionID: s.id, CallID: info.id,
		Server: r.Redact(server), Tool: r.Redact(tool), ExposedName: r.Redact(info.exposedName)})
	res, err := s.authorizedCall(ctx, server, tool, args, info)
	if err != nil {
		end(ToolCallEnd{ErrorKind: KindOf(err)})
	} else {
		end(ToolCallEnd{IsError: res.IsError()})
	}
	return res, err
}

// authorizedCall is callTool without the observer.
func (s *Session) authorizedCall(ctx context.Context, server, tool string, args json.RawMessage, info callInfo) (*CallResult, error) {
	res, err := s.callToolAs(s.host.withSubject(ctx, s.subject), server, tool, args, info)
	if err != nil && authorizationFailure(err) {
		var e *Error
		if errors.As(err, &e) && e.Kind != KindAuthorization && e.Kind != KindDenied {
			c := *e
			c.Kind = KindAuthorization
			c.Message = fmt.Sprintf("%s/%s: %s", server, tool, authorizationMessage(err))
			c.ModelMessage = modelMsgAuthorization.text
			return res, &c
		}
	}
	return res, err
}

func (s *Session) callToolAs(ctx context.Context, server, tool string, args json.RawMessage, info callInfo) (*CallResult, error) {
	h := s.host
	c, ok := h.conns[server]
	if !ok {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrUnknownServer, "unknown server %q", server)
	}
	arguments, err := decodeArguments(args)
	if err != nil {
		return nil, newError(KindToolError, modelMsgNotJSONObject(err),
			err, "invalid arguments for %s/%s: %v", server, tool, err)
	}
	// guard, schema, gate, resolve
	d, err := s.decide(ctx, c, tool, args, arguments, info)
	if err != nil {
		return nil, err
	}
	// No un-audited execution: the decision record is handed to the OS
	// before the call is sent, and a failed write refuses the call.
	if err := s.auditDecision(ctx, server, tool, d.rec); err != nil {
		return nil, err
	}
	start := time.Now()
	t := d.tool.Tool
	creq := mcpconn.CallRequest{Tool: t, Arguments: arguments, Secure: d.secure, Renewer: (*renewer)(s)}
	if dc := info.durable; dc != nil {
		failpoint.Hit(failpoint.DurableAfterDecision)
		if out, err, stop := s.durableSend(ctx, server, tool, d, dc, start); stop {
			return out, err
		}
		failpoint.Hit(failpoint.DurableAfterLedger)
		creq.Meta = map[string]any{IdempotencyKeyMeta: dc.key}
		creq.Task, creq.KeepTask = dc.task, detached
	}
	if h.obs != nil {
		creq.Observe = h.observeMCPRequest(server, t.Name)
	}
	creq.OnTask = func(u mcpconn.TaskUpdate) {
		if dc := info.durable; dc != nil {
			h.recordTask(ctx, dc, u.TaskID)
		}
		if info.emit != nil {
			info.emit(taskEvent(info, server, tool, u))
		}
	}
	creq.Decide = func(ctx context.Context, q mcpconn.TaskQuestion) (bool, error) {
		return s.decideTaskQuestion(ctx, server, d.tool, args, info, q)
	}
	var progress *progressForwarder
	if info.emit != nil {
		progress = startProgress(info.emit, Event{Type: EventToolProgress, Step: info.step, CallID: info.id,
			ExposedName: info.exposedName, Server: server, Tool: tool}, start)
		creq.Progress = progress.notify
	}
	result, sent, err := c.Call(ctx, creq)
	progress.stop()
	if info.durable != nil {
		failpoint.Hit(failpoint.DurableAfterSend)
	}
	out, err := h.callResult(server, t.Name, result, sent, d.secure != nil, err)
	if err == nil && out != nil {
		// Read from the result as the server sent it: redaction may
		// withhold a _meta, never a label.
		out.Labels = resultLabels(h.effective(server, d.tool), result)
	}
	if err == nil && out != nil {
		// PostToolUse hooks see the redacted result; what they leave is
		// what the model gets, and the result record says what they did.
		out.Result, d.hookRule = s.postHooks(ctx, server, d.tool, arguments, info, out.Result, d.hookContext)
	}
	return s.auditResult(ctx, server, tool, d, start, out, err)
}

// taskEvent is the tool_task event of a call's task update (the turn's
// emit masks the server's words, redactEvent).
func taskEvent(info callInfo, server, tool string, u mcpconn.TaskUpdate) Event {
	return Event{Type: EventToolTask, Step: info.step, CallID: info.id, ExposedName: info.exposedName,
		Server: server, Tool: tool, TaskID: u.TaskID, TaskStatus: u.Status, StatusMessage: u.StatusMessage}
}

// decided is a call that may run: its tool, its decision record (to be
// written before the call is sent), and its secure values.
type decided struct {
	tool     *CatalogTool
	rec      *approvals.Record
	decision *CallDecision
	secure   *mcpconn.SecureArgs // nil: the tool takes none
	// hookContext is the PreToolUse hooks' additionalContext; hookRule
	// says what a PostToolUse hook did (host/hooks.go).
	hookContext []string
	hookRule    string
}

// decide runs the checks before a call: the secure-name guard, the
// arguments' schema, the approval gate, and the resolution of secure
// values. The decision holds for the definition it was made under.
// Approvers may take minutes, and the server may change the tool meanwhile
// (to a destroy with global blast radius, say): after the decision, and
// the secure values resolved for it, the catalog is checked again, and a
// changed definition is decided again from the start. Both decisions are
// audited.
func (s *Session) decide(ctx context.Context, c *mcpconn.Conn, tool string, args, arguments json.RawMessage, info callInfo) (decided, error) {
	h := s.host
	server := c.Name()
	for attempt := 1; ; attempt++ {
		ct, err := s.lookupTool(ctx, c, tool)
		if err != nil {
			return decided{}, err
		}
		if err := s.guard(ctx, server, ct, args, info); err != nil {
			return decided{}, err
		}
		// After the secure-name guard, so the validator's message (which
		// quotes the arguments) never echoes a secure name back to the
		// model.
		t := ct.Tool
		if info.checkSchema {
			if err := h.args.validate(inputSlot(ct), t.InputSchema, t.ValidationCost(), arguments); err != nil {
				return decided{}, newError(KindToolError, modelMsgSchemaInvalid(err), err, "invalid arguments for %s/%s: %v", server, tool, err)
			}
		}
		info.tighten = s.preHooks(ctx, server, ct, arguments, info)
		rec, decision, err := s.gateCall(ctx, server, ct, args, info)
		if err != nil {
			return decided{}, err
		}
		secure, err := s.secureArgs(ctx, server, t)
		if err != nil {
			s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeBindingFailed, rec)
			return decided{}, err
		}
		if !definitionChanged(ct, c.Snapshot().Tool(tool)) {
			return decided{tool: ct, rec: rec, decision: decision, secure: secure, hookContext: info.tighten.context}, nil
		}
		// The decision was for a definition the server no longer offers:
		// audit it as not executed and decide again.
		h.logger.Warn("the tool's definition changed while its call was being decided; deciding again",
			"server", server, "tool", tool, "session", s.id, "decidedHash", t.DefHash())
		rec.Result = approvals.ResultNotExecuted
		if err := s.auditDecision(ctx, server, tool, rec); err != nil {
			return decided{}, err
		}
		if attempt == maxRedecisions {
			return decided{}, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable,
				"%s/%s: the tool's definition changed %d times while its call was being decided; not sent", server, tool, attempt)
		}
	}
}

// guard refuses arguments that name a secure parameter or repeat a key,
// and model arguments that hold a protected value; each refusal is audited.
func (s *Session) guard(ctx context.Context, server string, ct *CatalogTool, args json.RawMessage, info callInfo) error {
	h := s.host
	tool := ct.Tool.Name
	if err := ct.Tool.CheckArguments(args); err != nil {
		if errors.Is(err, ErrDuplicateKeyInArguments) {
			// Servers disagree on which of repeated values wins, and the
			// audit record could not say which one was meant.
			h.logger.Warn("refused a call whose arguments repeat a key",
				"server", server, "tool", tool, "session", s.id)
			s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
			return newError(KindToolError, modelMsgDuplicateKey, err,
				"refused %s/%s: an object in the arguments repeats a key; nothing was sent", server, tool)
		}
		h.logger.Warn("refused a call whose arguments name a secure parameter (possible prompt injection)",
			"server", server, "tool", tool, "session", s.id)
		s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
		return newError(KindBinding, modelMsgInvalidArguments, err,
			"refused %s/%s: the arguments name a host-controlled (secure) parameter; nothing was sent", server, tool)
	}
	// A model that learned a protected value (from a leak elsewhere, or a
	// user who pasted it) must not forward it to a server: refuse, audit,
	// and tell the model nothing about the value.
	if info.fromModel && h.redactor.ContainsSecretBytes(args) {
		h.logger.Warn("refused a model call whose arguments hold a protected value (possible exfiltration)",
			"server", server, "tool", tool, "session", s.id)
		s.auditRefusal(ctx, server, ct, args, info, approvals.OutcomeInjectionBlocked, nil)
		return newError(KindBinding, modelMsgSecretInArgs, ErrSecretInArguments,
			"refused %s/%s: the model's arguments hold a protected value; nothing was sent", server, tool)
	}
	return nil
}

// auditDecision writes a decision record; a failed write refuses the call.
func (s *Session) auditDecision(ctx context.Context, server, tool string, rec *approvals.Record) error {
	h := s.host
	if err := h.writeAudit(ctx, rec); err != nil {
		h.logger.Error("audit write failed; the call was not sent", "server", server, "tool", tool, "err", err)
		return newError(KindInternal, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, err),
			"%s/%s: refused, the call was not sent: its audit record could not be written: %v", server, tool, err)
	}
	return nil
}

// auditResult writes the result record of a call that ran, then hands
// back its outcome. The record is written before the result goes back to
// the model; a failed write withholds the result (and the sink refuses
// later calls).
func (s *Session) auditResult(ctx context.Context, server, tool string, d decided, start time.Time, result *CallResult, err error) (*CallResult, error) {
	return s.auditResultAs(ctx, server, tool, d, start, result, err, "")
}

// auditResultAs is auditResult with the record's result given (empty:
// from the outcome).
func (s *Session) auditResultAs(ctx context.Context, server, tool string, d decided, start time.Time, result *CallResult, err error, kind approvals.ResultKind) (*CallResult, error) {
	h := s.host
	// The result record is a copy: the sink may keep the decision record.
	done := *d.rec
	if d.hookRule != "" {
		done.Rules = slices.Concat(d.rec.Rules, []string{d.hookRule})
	}
	done.Phase = approvals.PhaseResult
	done.TS = time.Now().UTC()
	done.DurationMs = done.TS.Sub(start).Milliseconds()
	switch {
	case err != nil && KindOf(err) == KindBinding:
		done.Outcome = approvals.OutcomeBindingFailed
		done.Result = approvals.ResultServerError
	case err != nil:
		done.Result = approvals.ResultServerError
	case result.IsError():
		done.Result = approvals.ResultToolError
	default:
		done.Result = approvals.ResultOK
	}
	if kind != "" {
		done.Result = kind
	}
	if result != nil {
		done.ResultLabels = result.Labels
	}
	if werr := h.writeAudit(ctx, &done); werr != nil {
		h.logger.Error("audit write failed after the call ran", "server", server, "tool", tool, "err", werr)
		if err == nil {
			return nil, newError(KindInternal, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, werr),
				"%s/%s: the call ran, but its result record could not be written to the audit log, so its result is withheld: %v", server, tool, werr)
		}
	}
	if err != nil {
		return nil, err
	}
	result.Decision = d.decision
	s.noteLabels(result.Labels)
	return result, nil
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
	if err != nil {
		return nil, newError(KindUnavailable, modelMsgUnavailable, err, "%v", err)
	}
	server := c.Name()
	if ct == nil {
		note := ""
		if len(snap.Warnings) > 0 {
			note = " (" + strings.Join(snap.Warnings, "; ") + ")"
		}
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "server %s has no tool %q%s", server, tool, note)
	}
	if ct.Status != ToolActive {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, tool, ct.Status, ct.Reason)
	}
	if s.host.toolTainted(snap, ct) {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, s.host.redactor.Redact(tool), ToolExcluded, taintReason)
	}
	if reason := s.host.toolPinHidden(snap, ct); reason != "" {
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "tool %s/%s is %s: %s", server, tool, ToolHidden, reason)
	}
	return ct, nil
}

// secureArgs resolves, coerces and validates the tool's secure values;
// nil for a tool without secureInputSchema (it never gets
// secureArguments).
func (s *Session) secureArgs(ctx context.Context, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	if !t.HasSecureSchema {
		return nil, nil
	}
	h := s.host
	schema, err := t.ValueSchema()
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: secureInputSchema cannot be compiled: %v", server, t.Name, err)
	}
	scope := bindings.Scope{SessionID: s.id, Subject: s.subject, Server: server, Tool: t.Name}
	resolved, err := h.binder.Resolve(s.bindingContext(ctx), scope, schema.PropertiesShared(), secureRequired(h.Server(server), t))
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	// Bound values rarely change between calls: reuse the prepared values
	// (coerced, validated, encoded) while they are the same.
	if v, ok := s.prepared.Load(t); ok {
		if p := v.(*preparedCall); p.matches(resolved) {
			return p.secure, nil
		}
	}
	values := make(map[string]any, len(resolved))
	for name, r := range resolved {
		v, err := schema.Coerce(name, r.Value)
		if err != nil {
			return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
		}
		values[name] = v
	}
	values = secureparams.Select(values, t)
	if values == nil {
		values = map[string]any{}
	}
	if err := schema.Validate(values); err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: secure value does not match secureInputSchema: %v", server, t.Name, err)
	}
	headers, err := secureparams.ParamHeaders(t, values)
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, err, "%s/%s: %v", server, t.Name, err)
	}
	secure, err := mcpconn.NewSecureArgs(t.Name, values, headers)
	if err != nil {
		return nil, newError(KindBinding, modelMsgOperatorFailure, errRedactedEncoding, "%s/%s: %v", server, t.Name, errRedactedEncoding)
	}
	if _, replaced := s.prepared.Swap(t, newPreparedCall(resolved, secure)); !replaced && s.preparedN.Add(1) > maxPrepared {
		// Keyed by definition: a server that keeps changing its tools
		// would grow a long session without bound. Start over.
		s.prepared.Clear()
		s.preparedN.Store(0)
	}
	return secure, nil
}

// renewer is a session as the mcpconn.Renewer of its calls (a conversion:
// nothing is allocated per call, and Session's methods stay its own).
type renewer Session

// RenewSecure drops the session's cached secure values of the tool and
// resolves fresh ones for the one retry after the server rejected the
// host's values (an expired or revoked token, say).
func (r *renewer) RenewSecure(ctx context.Context, server string, t *secureparams.Tool) (*mcpconn.SecureArgs, error) {
	s := (*Session)(r)
	h := s.host
	for _, p := range t.SecureParams {
		h.binder.Invalidate(bindings.Scope{SessionID: s.id, Subject: s.subject, Server: server, Tool: t.Name, Param: p})
	}
	fresh, err := s.secureArgs(ctx, server, t)
	if err == nil {
		h.logger.Info("server rejected the secure arguments; retrying once with freshly resolved values", "server", server, "tool", t.Name)
	}
	return fresh, err
}

// maxPrepared bounds a session's prepared calls (one per tool definition
// called); beyond it the cache is cleared.
const maxPrepared = 256

// preparedCall is a session's last prepared secure values for one tool
// definition, with the resolved values they were prepared from. Keyed by
// the parsed definition (a pointer): a changed definition is a new key.
type preparedCall struct {
	resolved map[string]string
	secure   *mcpconn.SecureArgs // read-only
}

func newPreparedCall(resolved map[string]bindings.Resolved, secure *mcpconn.SecureArgs) *preparedCall {
	p := &preparedCall{resolved: make(map[string]string, len(resolved)), secure: secure}
	for name, r := range resolved {
		p.resolved[name] = r.Value
	}
	return p
}

// matches reports whether resolved are the values p was prepared from.
func (p *preparedCall) matches(resolved map[string]bindings.Resolved) bool {
	if len(resolved) != len(p.resolved) {
		return false
	}
	for name, r := range resolved {
		if v, ok := p.resolved[name]; !ok || v != r.Value {
			return false
		}
	}
	return true
}

// callResult is the outcome of a call as the host hands it on: the result
// with any secret the server echoed redacted, or the failure as an *Error
// of the right Kind, with a message for the operator (server text
// redacted) and one for the model (no server text when the call carried
// secure values).
func (h *Host) callResult(server, tool string, result *mcp.CallToolResult, sent *mcpconn.SecureArgs, carriesSecure bool, err error) (*CallResult, error) {
	if err == nil {
		return &CallResult{Server: server, Tool: tool, Result: h.redactResult(result), SecureParams: sent.Names()}, nil
	}
	var ce *mcpconn.CallError
	if !errors.As(err, &ce) {
		return nil, newError(KindInternal, modelMsgOperatorFailure, err, "%s/%s: %v", server, tool, err)
	}
	switch ce.Failure {
	case mcpconn.FailUnavailable:
		return nil, newError(KindUnavailable, modelMsgUnavailable, ce.Err, "%v", ce.Err)
	case mcpconn.FailCancelled:
		return nil, newError(KindInternal, modelMsgCancelled, ce.Err, "%s/%s: cancelled", server, tool)
	case mcpconn.FailTimeout:
		if ce.Task != "" {
			return nil, newError(KindUnavailable, modelMsgTimeout, ce.Err, "%s/%s: its task %s did not finish within %s (taskTimeout); it was cancelled",
				server, tool, h.redactor.Redact(ce.Task), ce.Timeout)
		}
		return nil, newError(KindUnavailable, modelMsgTimeout, ce.Err, "%s/%s: no answer within %s", server, tool, ce.Timeout)
	case mcpconn.FailProtocol:
		var perr *ProtocolError
		errors.As(ce.Err, &perr)
		return nil, newError(KindToolError, modelMsgBadResponse, ce.Err, "%s/%s: %s", server, tool, perr.Error())
	case mcpconn.FailConnectionLost:
		return nil, newError(KindUnavailable, modelMsgConnectionLost, ce.Err,
			"%s/%s: connection lost: %s", server, tool, h.redactor.Redact(ce.Err.Error()))
	case mcpconn.FailToolGone:
		return nil, newError(KindUnavailable, modelMsgUnavailable, ErrToolUnavailable, "%s/%s is no longer offered by the server", server, tool)
	}
	code, message := 0, ce.Err.Error()
	if ce.RPC != nil {
		code, message = ce.RPC.Code, ce.RPC.Message
	}
	switch {
	case ce.Failure == mcpconn.FailSecureRejected:
		return nil, newError(KindBinding, modelMsgOperatorFailure, fmt.Errorf("%w: %w", ErrSecureRejected, ce.Err),
			"%s/%s: the server rejected the call's secure arguments (-32602): %s", server, tool, h.redactor.Redact(message))
	case code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY && slices.Contains(ce.RPC.RequiredExtensions(), config.TasksExtension):
		return nil, newError(KindConfig, modelMsgOperatorFailure, ce.Err,
			"%s/%s: the server runs the tool as a task and requires the Tasks extension (%s, -32021): set mcpServers.%s.tasks: auto",
			server, tool, config.TasksExtension, server)
	case code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		fix := "check secureParams.extensions"
		if ids := ce.RPC.RequiredExtensions(); len(ids) > 0 {
			fix = fmt.Sprintf("the server requires the extension %s: add it to mcpServers.%s.secureParams.extensions (and bind the tool's secure parameters)",
				h.redactor.Redact(strings.Join(ids, ", ")), server)
		}
		return nil, newError(KindBinding, modelMsgOperatorFailure, ce.Err,
			"%s/%s: the server requires a client capability that was not negotiated (-32021): %s; %s", server, tool, h.redactor.Redact(message), fix)
	case carriesSecure:
		return nil, newError(KindToolError, modelMsgServerError, ce.Err,
			"%s/%s: server error %d: %s", server, tool, code, h.redactor.Redact(message))
	}
	safe := h.redactor.Redact(message)
	return nil, newError(KindToolError, modelMsgServerErrorText(safe), ce.Err,
		"%s/%s: server error %d: %s", server, tool, code, safe)
}

// redactResult masks any registered secret the server echoed back. The
// common case — plain text content that contains no secret — is checked
// without re-encoding the result.
func (h *Host) redactResult(r *mcp.CallToolResult) *mcp.CallToolResult {
	if r == nil || h.redactor.Len() == 0 {
		return r
	}
	if clean, known := h.resultIsClean(r); known && clean {
		return r
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return withheld(r)
	}
	cleaned := h.redactor.RedactJSON(raw)
	if bytes.Equal(cleaned, raw) {
		return r
	}
	out, err := mcp.ParseCallToolResult((*json.RawMessage)(&cleaned))
	if err != nil {
		return withheld(r)
	}
	return out
}

// valueIsClean walks decoded JSON for strings that contain a secret; known
// is false for values it cannot look into.
//
// Numbers are looked into by the JSON path (RedactJSON), and only when a
// registered value could be part of one (a numeric PIN, say).
func valueIsClean(v any, has func(string) bool, numbers bool) (clean, known bool) {
	switch x := v.(type) {
	case nil, bool:
		return true, true
	case float64, json.Number:
		return true, !numbers
	case string:
		return !has(x), true
	case map[string]any:
		for k, e := range x {
			if has(k) {
				return false, true
			}
			if clean, known := valueIsClean(e, has, numbers); !clean || !known {
				return clean, known
			}
		}
		return true, true
	case []any:
		for _, e := range x {
			if clean, known := valueIsClean(e, has, numbers); !clean || !known {
				return clean, known
			}
		}
		return true, true
	default:
		return false, false
	}
}

func withheld(r *mcp.CallToolResult) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: r.IsError, Content: []mcp.Content{mcp.NewTextContent("[result withheld: it contained a secret]")}}
}

// resultIsClean checks every string of a result for secrets: content
// text, MIME types, base64 payloads (printed by call --json), and each
// block's annotations and _meta as well as the result's own _meta (printed
// by call --json and stream-json, handed to library callers). known is
// false when the result has parts it does not look into.
func (h *Host) resultIsClean(r *mcp.CallToolResult) (clean, known bool) {
	has, numbers := h.redactor.ContainsSecret, h.redactor.MayMatchNumbers()
	if r.StructuredContent != nil {
		if clean, known := valueIsClean(r.StructuredContent, has, numbers); !known || !clean {
			return clean, known
		}
	}
	// _meta never reaches the model, but library callers may log it; walk
	// it without re-encoding (modern results carry it every time).
	if clean, known := metaIsClean(r.Meta, has, numbers); !known || !clean {
		return clean, known
	}
	for _, c := range r.Content {
		var ann *mcp.Annotations
		var meta *mcp.Meta
		var texts [2]string
		switch v := c.(type) {
		case mcp.TextContent:
			ann, meta, texts[0] = v.Annotations, v.Meta, v.Text
		case *mcp.TextContent:
			ann, meta, texts[0] = v.Annotations, v.Meta, v.Text
		case mcp.ImageContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case *mcp.ImageContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case mcp.AudioContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		case *mcp.AudioContent:
			ann, meta, texts = v.Annotations, v.Meta, [2]string{v.MIMEType, v.Data}
		default:
			return false, false
		}
		if has(texts[0]) || has(texts[1]) || !annotationsAreClean(ann, has) {
			return false, true
		}
		if clean, known := metaIsClean(meta, has, numbers); !known || !clean {
			return clean, known
		}
	}
	return true, true
}

func metaIsClean(m *mcp.Meta, has func(string) bool, numbers bool) (clean, known bool) {
	if m == nil {
		return true, true
	}
	if m.ProgressToken != nil {
		if clean, known := valueIsClean(m.ProgressToken, has, numbers); !known || !clean {
			return clean, known
		}
	}
	return valueIsClean(m.AdditionalFields, has, numbers)
}

func annotationsAreClean(a *mcp.Annotations, has func(string) bool) bool {
	if a == nil {
		return true
	}
	if has(a.LastModified) {
		return false
	}
	for _, role := range a.Audience {
		if has(string(role)) {
			return false
		}
	}
	return true
}
