package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/asks"
	"github.com/agenthost/agenthost/host/internal/attempts"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/progress"
	"github.com/agenthost/agenthost/host/internal/results"
	"github.com/agenthost/agenthost/host/internal/taskq"
	"github.com/agenthost/agenthost/internal/failpoint"
	"github.com/mark3labs/mcp-go/mcp"
)

// The call pipeline. A tool call goes down a chain of stages, each a type
// with one job, assembled once per host (newPipeline) the way net/http
// composes handlers: a stage holds the next one and either calls it or
// answers without it (a refusal, an error), so a call's context goes one
// way, down, and its outcome comes back up the same chain.
//
//	observe   the tool call's span (only with an Observer)
//	refuse    the session's subject for OAuth, and the one owner of
//	          refusals: warn, audit record, error; authorization failures
//	lookup    the server, the arguments object, the offered tool; then
//	          the arguments as given: the guard (secure names, repeated
//	          keys, protected values), then the tool's inputSchema
//	decide    the PreToolUse hooks' word, then the approval workflow's
//	          decision, then (allowed) the secure values
//	audit     the decision record before the send, the result record after
//	durable   a durable turn's ledger of sends (only with Durability;
//	          host/durable.go)
//	result    the server's answer as the model gets it: the failure's
//	          Kind, labels, secrets masked, then the PostToolUse hooks
//	send      the tools/call attempts (one retry, each attempt observed)
//
// The stages are written in this file in that order, each with the
// functions it hands the call's context to; what a stage decides without
// the context (the guard, the gate's check and answer, the audit records,
// the hooks' verdicts) lives beside the stage's topic in the host's other
// files and in its leaf packages (host/internal/...).
//
// The order is the security model's: nothing is resolved before the gate
// allowed the call; the decision record reaches the audit sink before the
// call is sent; secure values never reach model-visible text, errors or
// audit (the result stage masks what the server echoes, and the hooks run
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
	argsCheck rules.ArgsCheck // the call's one check of args (decodeArguments)
	ct        *CatalogTool
	decisions int // how often the call was decided (a changed definition decides again)

	// gate, resolve
	rec      *auditlog.Record // the decision record
	decision *CallDecision
	secure   *mcpconn.SecureArgs // nil: the tool takes none

	// audit, durable, result
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
	send := sendStage{}
	if h.obs != nil {
		send.obs = &attempts.Observer{Obs: h.obs, Redactor: h.redactor, Transport: func(server string) string {
			if sc := h.cfg.MCPServers[server]; sc != nil {
				return string(sc.Type)
			}
			return ""
		}}
	}
	var next stage = send
	next = resultStage{next: next}
	if h.durable != nil {
		next = durableStage{next: next}
	}
	audit := &auditStage{next: next}
	next = decideStage{obs: h.obs, next: audit}
	lookup := lookupStage{next: next}
	audit.redecide = lookup
	next = refuseStage{next: lookup}
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
	return s.host.pipeline.serve(ctx, &call{s: s, server: server, tool: tool, args: args, info: callInfo{id: newCallID(), checkSchema: true}})
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

// refuseStage runs the call as the session's subject (the OAuth client
// authorizes for it: the Authorizer reads it from the context) and is the
// one owner of refusals: a stage below that refuses a call answers a
// *refusal, and this stage warns, writes the refusal's audit record (not
// executed) and returns the refusal's error. A refusal is audited before
// it goes back to the caller: the stages between the refusing one and
// this hand an error up as it is. A failed authorization gets its own
// Kind (authorizationError).
type refuseStage struct{ next stage }

func (st refuseStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	s, h := c.s, c.s.host
	if h.auth != nil {
		ctx = h.auth.WithSubject(ctx, s.subject)
	}
	res, err := st.next.serve(ctx, c)
	if r, ok := err.(*refusal); ok {
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
		if werr := h.record.Write(ctx, rec); werr != nil {
			h.logger.Error("audit write failed", "err", werr)
		}
		res, err = nil, r.err
	}
	if err != nil && hosterr.IsAuthorization(err) {
		return res, authorizationError(c, err)
	}
	return res, err
}

// authorizationError is the error of a call whose authorization failed
// (hosterr.IsAuthorization), as its caller gets it: of Kind
// KindAuthorization with the authorization's message, unless it already
// is one or the call was denied.
func authorizationError(c *call, err error) error {
	var e *Error
	if errors.As(err, &e) && e.Kind != KindAuthorization && e.Kind != KindDenied {
		a := *e
		a.Kind = KindAuthorization
		a.Message = fmt.Sprintf("%s/%s: %s", c.server, c.tool, hosterr.AuthorizationMessage(err))
		a.ModelMessage = hosterr.MsgAuthorization.String()
		return &a
	}
	return err
}

// denyRecord is the audit record of a call refused before the approval
// workflow ran.
func (s *Session) denyRecord(c *call, outcome rules.Outcome) *auditlog.Record {
	ct := c.ct
	check := approvals.Check{
		SessionID: s.id, Subject: s.subject, CallID: c.info.id,
		Call:        rules.Call{Server: c.server, Tool: ct.Tool.Name, Args: c.args, ArgsCheck: c.argsCheck, TrustLevel: s.trustLevel},
		Risk:        s.host.effective(c.server, ct),
		ToolDefHash: ct.Tool.DefHash(), ExposedName: c.info.exposedName, SecureParams: ct.Tool.SecureParams,
	}
	res := approvals.Result{Decision: rules.Decision{Action: rules.ActionDeny, Risk: check.Risk}, Outcome: outcome}
	return auditlog.NewRecord(check, res, time.Now())
}

// lookupStage finds what the call is for: its server and its arguments
// object (once), and the tool the server offers now (again each time the
// call is decided again); then it checks the arguments as given: the
// guard first (no secure name, no repeated key, and from a model no
// protected value), then the tool's inputSchema when the call asks for
// it. The guard goes first so the validator's message (which quotes the
// arguments) never echoes a secure name back to the model.
type lookupStage struct{ next stage }

func (st lookupStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if c.conn == nil {
		conn, ok := c.s.host.conns[c.server]
		if !ok {
			return nil, hosterr.New(KindUnavailable, hosterr.MsgUnavailable, ErrUnknownServer, "unknown server %q", c.server)
		}
		arguments, check, err := decodeArguments(c.args, c.info.argsCheck)
		if err != nil {
			return nil, hosterr.New(KindToolError, hosterr.MsgNotJSONObject(err),
				err, "invalid arguments for %s/%s: %v", c.server, c.tool, err)
		}
		c.conn, c.arguments, c.argsCheck = conn, arguments, check
	}
	snap, ct, err := c.conn.Lookup(ctx, c.tool)
	if ct, err = c.s.offered(c.conn, c.tool, snap, ct, err); err != nil {
		return nil, err
	}
	c.ct = ct
	c.decisions++
	if r := c.s.guard(c); r != nil {
		return nil, r
	}
	if err := c.s.host.checkSchema(c); err != nil {
		return nil, err
	}
	return st.next.serve(ctx, c)
}

// decideStage decides the call: the PreToolUse hooks' word first
// (c.tighten: a hook can only tighten the decision), then the approval
// workflow's, which reads it. A call the workflow denies is refused with
// the record the workflow made. A call it allows has its secure values
// resolved, coerced and validated (after the gate, never before: a
// failure refuses it, binding_failed) and goes on with its decision
// record (to be written before the call is sent).
type decideStage struct {
	obs  Observer // nil: none
	next stage
}

func (st decideStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	s := c.s
	if h := s.host; h.hooks.HasPre() {
		v := h.hooks.Pre(ctx, s.hookCall(c))
		c.tighten = s.tighten(c, v)
	}
	check, err := s.gateCheck(c)
	if err != nil {
		return nil, err
	}
	var asked time.Time
	if st.obs != nil {
		asked = time.Now()
	}
	res, gateErr := s.gate.Check(ctx, check)
	s.emitNobodyAsked(c, res)
	if st.obs != nil {
		st.obs.Decision(ctx, DecisionInfo{Server: c.server, Tool: c.ct.Tool.Name, Result: res, Wait: time.Since(asked)})
	}
	detached := gateErr != nil && errors.Is(context.Cause(ctx), approvals.ErrDetached)
	if err := s.gateAnswer(c, check, res, gateErr, detached); err != nil {
		return nil, err
	}
	secure, err := s.secure.Args(ctx, s.secureOf(), c.server, c.ct.Tool)
	if err != nil {
		return nil, &refusal{outcome: rules.OutcomeBindingFailed, rec: c.rec, err: err}
	}
	c.secure = secure
	return st.next.serve(ctx, c)
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
	if err := h.record.Write(ctx, c.rec); err != nil {
		return nil, h.auditRefused(c.server, c.tool, err)
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
	werr := h.record.Write(ctx, h.resultRecord(c, res, err))
	return h.resultOutcome(c, res, err, werr)
}

// resultStage hands on the server's answer as the model is to see it: a
// failure as an *Error of the right Kind; a result with its labels read
// (from the result as the server sent it: redaction may withhold a _meta,
// never a label), any secret the server echoed masked, then the
// PostToolUse hooks run on the redacted result: what they leave, with the
// PreToolUse hooks' additionalContext, is what the model gets, and the
// result record says what they did (c.hookRule).
type resultStage struct{ next stage }

func (st resultStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	h := c.s.host
	out, err := st.next.serve(ctx, c)
	if err != nil {
		return nil, hosterr.FromCall(h.redactor, c.server, c.ct.Tool.Name, c.secure != nil, err)
	}
	raw := out.Result
	out.Labels = results.Labels(h.effective(c.server, c.ct), raw)
	out.Result = results.Redact(h.redactor, raw)
	var v *hooks.PostVerdict
	if h.hooks.HasPost() && out.Result != nil {
		b, err := json.Marshal(out.Result)
		if err != nil {
			b = []byte(`null`)
		}
		pv := h.hooks.Post(ctx, c.s.hookCall(c), b)
		v = &pv
	}
	out.Result, c.hookRule = c.s.postHooked(c, out.Result, v)
	return out, nil
}

// sendStage sends the call: each tools/call attempt (the one retry
// mcpconn says the server's answer allows included) under its own MCP
// request span, with the call's task updates and progress forwarded to
// the turn. It answers the result as the server sent it (the result stage
// masks it) or mcpconn's error.
type sendStage struct{ obs *attempts.Observer }

func (st sendStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	req := mcpconn.CallRequest{Tool: c.ct.Tool, Arguments: c.arguments, Secure: c.secure, Meta: c.meta}
	if dc := c.info.durable; dc != nil {
		// The task an earlier send created is followed, not sent again;
		// a task is left running when the process stops.
		req.Task, req.KeepTask = dc.Task, detached
	}
	if dc, emit := c.info.durable, c.info.emit; dc != nil || emit != nil {
		req.OnTask = func(u mcpconn.TaskUpdate) {
			if dc != nil {
				dc.RecordTask(ctx, u.TaskID, c.s.host.redactor, c.s.host.logger)
			}
			if emit != nil {
				emit(taskEvent(c.info, c.server, c.tool, u))
			}
		}
	}
	if c.conn.TasksOn() { // only a task asks questions: no method value per call otherwise
		h := c.s.host
		req.Decide = taskq.Asker{Gate: c.s.gate, Redactor: h.redactor, Record: h.record, Refused: h.auditRefused, Emit: c.info.emit, Call: c}.Decide
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
			actx, req.Meta, end = st.obs.Start(ctx, c.server, req.Tool.Name, c.conn.Attempt(), base)
		}
		result, sent, err = c.conn.Call(actx, req)
		if end != nil {
			end(result, err)
		}
		again := retryOf(err, retried)
		if again == mcpconn.RetryRenewed {
			if fresh, rerr := c.s.secure.Renew(ctx, c.s.secureOf(), c.server, req.Tool); rerr == nil && fresh != nil {
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

// TaskCheck is what a question of the call's task is decided from
// (taskq.Call): the call's own check, its definition's hash and the call
// as its approval events name it.
func (c *call) TaskCheck() (approvals.Check, string, asks.Call) {
	return c.s.callCheck(c), c.ct.Tool.DefHash(), c.info.ask(c.server, c.ct.Tool.Name, "")
}

// retryOf is how an attempt that ended with err may be sent once more: as
// mcpconn says, and only once (retried: this was the retry).
func retryOf(err error, retried bool) mcpconn.Retry {
	if err == nil || retried {
		return mcpconn.RetryNone // before ce: it lives on the heap
	}
	var ce *mcpconn.CallError
	if !errors.As(err, &ce) {
		return mcpconn.RetryNone
	}
	return ce.Retry
}
