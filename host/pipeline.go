package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
)

// The call pipeline. A tool call goes down a chain of stages, each a type
// with one job, assembled once per host (newPipeline) the way net/http
// composes handlers: a stage holds the next one and either calls it or
// answers without it (a refusal, an error), so a call's context goes one
// way, down, and its outcome comes back up the same chain.
//
//	observe   the tool call's span (only with an Observer)
//	subject   the session's subject for OAuth, authorization failures
//	refuse    the one owner of refusals: warn, audit record, error
//	lookup    the server, the arguments object, the offered tool
//	guard     secure names, repeated keys, protected values in the arguments
//	schema    the arguments against the tool's inputSchema
//	preHooks  the PreToolUse hooks' word on the decision
//	gate      the approval workflow's decision
//	resolve   the secure values, after the gate
//	audit     the decision record before the send, the result record after
//	durable   a durable turn's ledger of sends (only with Durability)
//	postHooks the PostToolUse hooks on the redacted result
//	redact    the server's answer as the host hands it on
//	send      the tools/call attempts (one retry, each attempt observed)
//
// The order is the security model's: nothing is resolved before the gate
// allowed the call; the decision record reaches the audit sink before the
// call is sent; secure values never reach model-visible text, errors or
// audit (the redact stage masks what the server echoes, and the hooks run
// before the values are resolved and after the result was redacted).

// stage is one step of the pipeline: it runs its part of c and hands c on
// to the next stage (or does not).
type stage interface {
	serve(ctx context.Context, c *call) (*CallResult, error)
}

// call is one tool call going down the pipeline: what it was asked for,
// and what the stages found out about it on the way.
type call struct {
	s      *Session
	server string
	tool   string
	args   json.RawMessage // as given: the guard, the gate and the audit see these
	info   callInfo

	// lookup
	conn      *mcpconn.Conn
	arguments json.RawMessage // the JSON object sent
	ct        *CatalogTool
	decisions int // how often the call was decided (a changed definition decides again)

	// gate, resolve
	rec      *auditlog.Record // the decision record
	decision *CallDecision
	secure   *mcpconn.SecureArgs // nil: the tool takes none

	// audit, durable, postHooks
	start time.Time
	// meta is the tools/call's _meta: a durable call's idempotency key.
	meta map[string]any
	// tighten is the PreToolUse hooks' word on the decision (nil: none).
	tighten  *callTighten
	hookRule string // what a PostToolUse hook did ("" nothing)
	// resultKind is the result record's result when not the outcome's;
	// not_executed: a durable call whose send could not be recorded was
	// not sent, and its decision record is written again as not executed.
	resultKind auditlog.ResultKind
}

// newPipeline assembles the host's call pipeline; the observer's and the
// durable turn's stages are left out of a host without them (the hooks'
// stages pass a call on when no hook is configured).
func newPipeline(h *Host) stage {
	var next stage = sendStage{obs: h.obs}
	next = redactStage{next: next}
	next = postHookStage{next: next}
	if h.durable != nil {
		next = durableStage{next: next}
	}
	audit := &auditStage{next: next}
	next = resolveStage{next: audit}
	next = gateStage{obs: h.obs, next: next}
	next = preHookStage{next: next}
	next = schemaStage{next: next}
	next = guardStage{next: next}
	lookup := lookupStage{next: next}
	audit.redecide = lookup
	next = refuseStage{next: lookup}
	next = subjectStage{next: next}
	if h.obs != nil {
		next = observeStage{obs: h.obs, next: next}
	}
	return next
}

// CallTool runs one tool call for the session through the pipeline a
// model's call takes: it refuses arguments that name a secure parameter or
// do not match the tool's inputSchema, decides, resolves and validates the
// secure values, sends the call with secureArguments, and maps failures to
// a *Error of the right Kind.
func (s *Session) CallTool(ctx context.Context, server, tool string, args json.RawMessage) (*CallResult, error) {
	return s.callTool(ctx, server, tool, args, callInfo{id: newCallID(), checkSchema: true})
}

func (s *Session) callTool(ctx context.Context, server, tool string, args json.RawMessage, info callInfo) (*CallResult, error) {
	return s.host.pipeline.serve(ctx, &call{s: s, server: server, tool: tool, args: args, info: info})
}

// observeStage is the tool call's span: the observer is told the call
// started and how it ended.
type observeStage struct {
	obs  Observer
	next stage
}

func (st observeStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	// Names as the operator typed them or the model sent them: masked like
	// everything else that leaves the host.
	r := c.s.host.redactor
	ctx, end := st.obs.StartToolCall(ctx, ToolCallInfo{SessionID: c.s.id, CallID: c.info.id,
		Server: r.Redact(c.server), Tool: r.Redact(c.tool), ExposedName: r.Redact(c.info.exposedName)})
	res, err := st.next.serve(ctx, c)
	if err != nil {
		end(ToolCallEnd{ErrorKind: KindOf(err)})
	} else {
		end(ToolCallEnd{IsError: res.IsError()})
	}
	return res, err
}

// subjectStage runs the call as the session's subject (the OAuth client
// authorizes for it) and gives a failed authorization its own Kind.
type subjectStage struct{ next stage }

func (st subjectStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	res, err := st.next.serve(c.s.host.withSubject(ctx, c.s.subject), c)
	if err != nil && authorizationFailure(err) {
		var e *Error
		if errors.As(err, &e) && e.Kind != KindAuthorization && e.Kind != KindDenied {
			a := *e
			a.Kind = KindAuthorization
			a.Message = fmt.Sprintf("%s/%s: %s", c.server, c.tool, authorizationMessage(err))
			a.ModelMessage = hosterr.MsgAuthorization.String()
			return res, &a
		}
	}
	return res, err
}

// refusal is a call refused before it was sent, as a stage answers it: the
// refuse stage logs it, audits it and hands back err.
type refusal struct {
	// warn is logged as a warning ("": not logged).
	warn string
	// outcome is the audit record's outcome, and the record then says not
	// executed ("": the record as the gate made it).
	outcome rules.Outcome
	// rec is the call's decision record (nil: refused before the gate, a
	// deny record is written).
	rec *auditlog.Record
	// err is what the caller gets.
	err error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// refuseStage is the one owner of refusals: a stage below that refuses a
// call answers a *refusal, and this stage warns, writes the refusal's
// audit record (not executed) and returns the refusal's error. A refusal
// is audited before it goes back to the caller: the stages between the
// refusing one and this hand an error up as it is.
type refuseStage struct{ next stage }

func (st refuseStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	res, err := st.next.serve(ctx, c)
	r, ok := err.(*refusal)
	if !ok {
		return res, err
	}
	s, h := c.s, c.s.host
	if r.warn != "" {
		h.logger.Warn(r.warn, "server", c.server, "tool", c.ct.Tool.Name, "session", s.id)
	}
	rec := r.rec
	if rec == nil {
		rec = s.denyRecord(c, r.outcome)
	}
	if r.outcome != "" {
		rec.Outcome, rec.Result = r.outcome, auditlog.ResultNotExecuted
	}
	if werr := h.writeAudit(ctx, rec); werr != nil {
		h.logger.Error("audit write failed", "err", werr)
	}
	return nil, r.err
}

// denyRecord is the audit record of a call refused before the approval
// workflow ran.
func (s *Session) denyRecord(c *call, outcome rules.Outcome) *auditlog.Record {
	ct := c.ct
	check := approvals.Check{
		SessionID: s.id, Subject: s.subject, CallID: c.info.id,
		Call:        rules.Call{Server: c.server, Tool: ct.Tool.Name, Args: c.args, TrustLevel: s.trustLevel},
		Risk:        s.host.effective(c.server, ct),
		ToolDefHash: ct.Tool.DefHash(), ExposedName: c.info.exposedName, SecureParams: ct.Tool.SecureParams,
	}
	res := approvals.Result{Decision: rules.Decision{Action: rules.ActionDeny, Risk: check.Risk}, Outcome: outcome}
	return auditlog.NewRecord(check, res, time.Now())
}
