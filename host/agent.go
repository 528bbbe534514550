package host

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/durableturn"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mask"
	"github.com/agenthost/agenthost/host/internal/results"
	turnpkg "github.com/agenthost/agenthost/host/internal/turn"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/failpoint"
	"github.com/agenthost/agenthost/llmview"
)

// TurnOptions tune one turn of the agent loop (MaxSteps,
// MaxRepeatedFailures, and an incoming W3C trace context).
type TurnOptions = turnpkg.Options

// ErrNoModel is returned when a turn runs on a host without a model: give
// one in Options.Model, or name one in the configuration's llm.model.
var ErrNoModel = errors.New("no model configured")

// Turn runs one user turn: it sends the conversation and the session's tool
// view to the model, runs the tool calls it asks for (several at once when
// it asks for several), feeds the results back, and repeats until the model
// answers without tool calls, MaxSteps is reached, or ctx ends. Events are
// delivered as they happen; the last one is always session_end. Breaking out
// of the loop cancels the turn. A session runs one turn at a time.
func (s *Session) Turn(ctx context.Context, prompt string, opts TurnOptions) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		s.turnMu.Lock()
		defer s.turnMu.Unlock()
		// The model is sent the prompt with protected values masked (a
		// secret resolved earlier, a session value a binding takes), as it
		// is sent everything else: the conversation, a durable turn's
		// stored input and the History hold only what the model saw.
		prompt := s.host.redactor.Redact(prompt)
		stopped := false
		s.turnEvents(ctx, opts, yield, &stopped, func(ctx context.Context, t *turn) {
			if s.host.durable == nil {
				t.run(ctx, prompt)
				return
			}
			s.startDurableTurn(ctx, t, prompt)
		})
	}
}

// turnEvents runs body with a new turn whose events go to yield (redacted,
// with the session id); a yield that returns false sets *stopped and
// cancels the turn.
func (s *Session) turnEvents(ctx context.Context, opts TurnOptions, yield func(Event) bool, stopped *bool, body func(context.Context, *turn)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	emit := func(e Event) {
		if *stopped {
			return
		}
		e.SessionID = s.id
		mask.Event(s.host.redactor, &e)
		if !yield(e) {
			*stopped = true
			cancel()
		}
	}
	t := &turn{s: s, opts: opts, State: turnpkg.State{Emit: emit, Redact: s.host.redactor.Redact, Start: time.Now()}}
	if obs := s.host.obs; obs != nil {
		ctx, t.Observed = obs.StartTurn(ctx, TurnInfo{SessionID: s.id, Model: s.host.modelName,
			TraceParent: opts.TraceParent, TraceState: opts.TraceState})
	}
	body(ctx, t)
}

// turn is one turn of a session: its bookkeeping (turnpkg.State), and
// for a durable turn cp, its checkpoint log (nil: a turn in memory), and
// engine, the engine's context for the turn (done once the engine stops).
type turn struct {
	turnpkg.State
	s      *Session
	opts   TurnOptions
	cp     Steps
	engine context.Context
	// view is the step's tool view (Ask sets it; Calls runs from it).
	view *llmview.View
}

// started emits session_start with what the model is offered.
func (t *turn) started(ctx context.Context) {
	h := t.s.host
	e := Event{Type: EventSessionStart, Model: h.modelName}
	if h.model == nil {
		t.Emit(e)
		return
	}
	h.connectPending(ctx)
	perServer := turnpkg.Offered(&e, t.s.View(ctx).Model)
	for _, snap := range h.Servers() {
		e.Servers = append(e.Servers, EventServer{Name: snap.Name, Status: snap.Status, Tools: perServer[snap.Name]})
	}
	t.Emit(e)
}

func (t *turn) run(ctx context.Context, prompt string) {
	t.started(ctx)
	if t.s.host.model == nil {
		t.Fail(KindConfig, ErrNoModel)
		return
	}
	turnpkg.Run(ctx, &t.State, t, t.opts, prompt)
}

// Ask implements turnpkg.Loop: the step's model answer, asked in memory,
// or as a durable turn's checkpointed step (replayed when it completed).
func (t *turn) Ask(ctx context.Context) (turnpkg.Answer, error) {
	s, h := t.s, t.s.host
	h.connectPending(ctx)
	t.view = s.View(ctx).Model
	if t.cp == nil {
		msg, err := t.generate(ctx, &model.Request{Model: h.modelName, Messages: s.requestMessages(), Tools: t.view.Tools()})
		switch {
		case err != nil && ctx.Err() != nil:
			return turnpkg.Answer{}, turnpkg.ErrInterrupted
		case err != nil:
			return turnpkg.Answer{}, fmt.Errorf("model: %w", err)
		}
		msg = turnpkg.Settle(msg, newCallID)
		return turnpkg.Answer{Msg: msg, Masked: mask.Message(h.redactor, msg)}, nil
	}
	ms, ran, err := t.modelStep(ctx, t.view)
	switch {
	case err != nil:
		return turnpkg.Answer{}, err
	case ms.Interrupted:
		return turnpkg.Answer{}, turnpkg.ErrInterrupted
	case ms.Error != "":
		return turnpkg.Answer{}, errors.New(ms.Error)
	case ran:
		return turnpkg.Answer{Msg: ms.Original, Masked: ms.Message}, nil
	}
	// The calls run from the checkpoint: the masked arguments, with the
	// calls whose own arguments held a protected value marked to be
	// refused as they were at first.
	return turnpkg.Answer{Msg: ms.Message, Masked: ms.Message, Tainted: ms.Tainted, Replayed: true}, nil
}

// Calls implements turnpkg.Loop.
func (t *turn) Calls(ctx context.Context, a turnpkg.Answer) []callOutcome {
	outcomes := t.runToolCalls(ctx, t.view, a.Msg.ToolCalls, a.Tainted, t.conversation(a.Masked.Content))
	if t.cp != nil {
		failpoint.Hit(failpoint.DurableAfterResult)
	}
	return outcomes
}

// generate runs one model request, forwarding streamed text as
// assistant_delta events, and returns the whole assistant message.
//
// Streamed text passes a stream redactor: a protected value the model
// repeats is masked even when it arrives in pieces.
func (t *turn) generate(ctx context.Context, req *model.Request) (model.Message, error) {
	defer func(start time.Time) { t.API += time.Since(start) }(time.Now())
	obs := t.s.host.obs
	if obs == nil {
		return t.stream(ctx, req)
	}
	ctx, end := obs.StartModelRequest(ctx, ModelRequestInfo{Model: req.Model, Step: t.Steps, Tools: len(req.Tools)})
	msg, err := t.stream(ctx, req)
	end(ModelRequestEnd{InputTokens: t.Last.PromptTokens, OutputTokens: t.Last.CompletionTokens,
		FinishReason: t.Finish, ToolCalls: len(msg.ToolCalls), Failed: err != nil, Cancelled: err != nil && ctx.Err() != nil})
	return msg, err
}

// stream runs one model request for generate.
func (t *turn) stream(ctx context.Context, req *model.Request) (model.Message, error) {
	return t.Stream(ctx, t.s.host.model, req, t.s.host.redactor.NewStream())
}

type callOutcome = turnpkg.Outcome

// runToolCalls runs a step's tool calls concurrently, their events
// forwarded from this goroutine (the iterator's) in the order
// turnpkg.Batch says: every tool_call event of the step is handled
// (printed by the CLI) before any of the step's approvers is asked.
func (t *turn) runToolCalls(ctx context.Context, view *llmview.View, calls []model.ToolCall, tainted []bool, conv approvals.Conversation) []callOutcome {
	outcomes := make([]callOutcome, len(calls))
	b := turnpkg.NewBatch[Event](len(calls))
	for i, tc := range calls {
		c := b.Call()
		run := func(ctx context.Context, dc *durableCall) callOutcome {
			defer c.Done()
			return t.s.runToolCall(ctx, view, tc, t.Steps, dc, conv, c.Emit)
		}
		if t.cp == nil {
			b.Go(func() { outcomes[i] = run(ctx, nil) })
			continue
		}
		// Durable: each call is a step, started in the calls' order (the
		// order the checkpoints are matched in on a replay).
		dc := &durableCall{Key: durableturn.IdempotencyKey(t.cp.TurnID(), tc.ID), Steps: t.cp, Tainted: tainted != nil && tainted[i]}
		wait := durableturn.Call(ctx, t.cp, func(ctx context.Context) turnpkg.Outcome { return run(ctx, dc) }, hosterr.MsgOperatorFailure.String())
		b.Go(func() {
			defer c.Done() // replayed (or not started): it announces nothing
			outcomes[i] = wait()
		})
	}
	b.Forward(t.Emit)
	return outcomes
}

// runToolCall executes one model tool call and returns what the model is
// told. Garbage from the model (unknown name, invalid JSON, arguments that
// fail inputSchema) comes back as a tool error it can correct.
func (s *Session) runToolCall(ctx context.Context, view *llmview.View, tc model.ToolCall, step int, dc *durableCall, conv approvals.Conversation, emit func(Event)) callOutcome {
	h := s.host
	base := Event{Step: step, CallID: tc.ID, ExposedName: tc.Name}
	args := turnpkg.CallArgs(tc.Arguments)
	// The call's one check of its arguments: the tool_call event, and
	// then the pipeline (the schema, the gate, the audit records), read it.
	argsCheck := rules.CheckArgs(args)
	modelError := func(text string) callOutcome {
		emit(turnpkg.ResultEvent(base, []mcp.Content{mcp.NewTextContent(text)}, true, nil))
		return callOutcome{Text: text, Failed: true}
	}

	ref, known := view.Lookup(tc.Name)
	base.Server, base.Tool = ref.Server, ref.Tool // every event of the call names its tool
	emit(turnpkg.CallEvent(base, args, argsCheck.Valid(args)))
	if !known {
		return modelError(fmt.Sprintf("Unknown tool %q. Call only the tools you were given.", hosterr.Truncate(h.redactor.Redact(tc.Name), 80)))
	}
	if dc != nil && dc.Tainted {
		// Replayed from the checkpoint, which holds the arguments masked:
		// the model's own held a protected value, refused as at first.
		return modelError(hosterr.MsgSecretInArgs.String())
	}

	res, err := s.callTool(ctx, ref.Server, ref.Tool, args,
		callInfo{id: tc.ID, exposedName: tc.Name, step: step, emit: emit, checkSchema: true, fromModel: true, durable: dc, conversation: conv, argsCheck: argsCheck})
	if err != nil {
		var he *Error
		msg := hosterr.MsgOperatorFailure.String()
		if af, ok := errors.AsType[*AuthorizationFailure](err); ok && af.AuthURL != "" {
			emit(Event{Type: EventAuthorization, Step: step, CallID: tc.ID, Server: ref.Server, Tool: ref.Tool,
				AuthURL: af.AuthURL, Subject: af.Subject})
		}
		if errors.As(err, &he) {
			msg = he.ModelMessage
			if he.Kind != KindToolError && he.Kind != KindDenied {
				emit(Event{Type: EventError, Step: step, CallID: tc.ID, Kind: he.Kind, Error: h.redactor.Redact(he.Error())})
			}
		}
		if msg == "" {
			msg = hosterr.MsgOperatorFailure.String()
		}
		return modelError(msg)
	}
	text := results.ForModel(res.Result)
	isErr := res.IsError()
	emit(turnpkg.ResultEvent(base, res.Result.Content, isErr, risk.LabelNames(res.Labels)))
	if isErr {
		text = "The tool reported an error:\n" + text
	}
	text = results.LabelNotice(res.Labels) + text
	return callOutcome{Text: results.ModelText(text, h.maxModelResult), Failed: isErr}
}

// conversation is what approvers of the step's calls are shown of the
// conversation (turnpkg.Conversation).
func (t *turn) conversation(modelText string) approvals.Conversation {
	return turnpkg.Conversation(t.s.transcript.Msgs, modelText, t.s.host.redactor.Redact)
}

// requestMessages is the conversation as sent to the model.
func (s *Session) requestMessages() []model.Message {
	return turnpkg.RequestMessages(s.host.systemPrompt, s.transcript.Msgs)
}

// Transcript returns a copy of the conversation so far (as loaded from the
// session's History by its first turn, plus what the turns added).
func (s *Session) Transcript() []model.Message {
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	return append([]model.Message(nil), s.transcript.Msgs...)
}
