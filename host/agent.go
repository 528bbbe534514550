package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
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
	view := t.s.View(ctx)
	perServer := map[string]int{}
	if n := view.Model.Len(); n > 0 {
		e.Tools = make([]string, 0, n)
	}
	for f, ref := range view.Model.All() {
		e.Tools = append(e.Tools, f.Name)
		perServer[ref.Server]++
	}
	for _, snap := range h.Servers() {
		e.Servers = append(e.Servers, EventServer{Name: snap.Name, Status: snap.Status, Tools: perServer[snap.Name]})
	}
	t.Emit(e)
}

func (t *turn) run(ctx context.Context, prompt string) {
	s, h := t.s, t.s.host
	t.started(ctx)
	if h.model == nil {
		t.Fail(KindConfig, ErrNoModel)
		return
	}
	maxSteps, maxRepeats := turnpkg.Limits(t.opts.MaxSteps, t.opts.MaxRepeatedFailures)
	if err := t.loadTranscript(ctx); err != nil {
		t.Fail(KindInternal, err)
		return
	}
	if err := t.appendMsgs(ctx, model.Message{Role: model.RoleUser, Content: prompt}); err != nil {
		t.Fail(KindInternal, err)
		return
	}
	failures := turnpkg.NewRepeats(maxRepeats)

	for {
		if t.Steps >= maxSteps {
			t.End(EndMaxSteps)
			return
		}
		t.Steps++
		h.connectPending(ctx)
		view := s.View(ctx).Model
		var msg, redacted model.Message
		var tainted []bool
		replayed := false
		if t.cp == nil {
			var err error
			msg, err = t.generate(ctx, &model.Request{Model: h.modelName, Messages: s.requestMessages(), Tools: view.Tools()})
			if err != nil {
				if ctx.Err() != nil {
					t.End(EndInterrupted)
					return
				}
				t.Fail(KindInternal, fmt.Errorf("model: %w", err))
				return
			}
			msg = turnpkg.Settle(msg, newCallID)
			redacted = mask.Message(h.redactor, msg)
		} else {
			ms, ran, err := t.modelStep(ctx, view)
			switch {
			case err != nil:
				t.Fail(KindInternal, err)
				return
			case ms.Interrupted:
				t.End(EndInterrupted)
				return
			case ms.Error != "":
				t.Fail(KindInternal, errors.New(ms.Error))
				return
			}
			msg, redacted, replayed = ms.Original, ms.Message, !ran
			if replayed {
				// The calls run from the checkpoint: the masked arguments,
				// with the calls whose own arguments held a protected value
				// marked to be refused as they were at first.
				msg, tainted = ms.Message, ms.Tainted
			}
		}
		// The conversation is sent again with every request (and handed
		// to the session's History): what the model said is kept with
		// protected values masked. Its tool calls run from the original
		// arguments, and are refused when they hold such a value.
		if err := t.appendMsgs(ctx, redacted); err != nil {
			t.Fail(KindInternal, err)
			return
		}
		if msg.Content != "" {
			t.Result = msg.Content
			if !replayed {
				t.Emit(Event{Type: EventAssistant, Step: t.Steps, Text: msg.Content})
			}
		}
		if len(msg.ToolCalls) == 0 {
			t.End(EndDone)
			return
		}

		outcomes := t.runToolCalls(ctx, view, msg.ToolCalls, tainted, t.conversation(redacted.Content))
		results := turnpkg.ToolResults(msg.ToolCalls, func(i int) string { return outcomes[i].text })
		if t.cp != nil {
			failpoint.Hit(failpoint.DurableAfterResult)
		}
		if err := t.appendMsgs(ctx, results...); err != nil {
			t.Fail(KindInternal, err)
			return
		}
		if ctx.Err() != nil {
			t.End(EndInterrupted)
			return
		}
		for i, tc := range msg.ToolCalls {
			if !outcomes[i].failed {
				continue
			}
			if n, stop := failures.Fail(tc.Name, tc.Arguments); stop {
				t.Fail(KindToolError, fmt.Errorf("the model repeated the same failing call to %s %d times; stopping the turn", tc.Name, n))
				return
			}
		}
	}
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

type callOutcome struct {
	text   string
	failed bool
}

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
		dc := &durableCall{key: durableturn.IdempotencyKey(t.cp.TurnID(), tc.ID), steps: t.cp, tainted: tainted != nil && tainted[i]}
		ch, err := t.cp.Go(ctx, "tool", func(ctx context.Context) (json.RawMessage, error) {
			o := run(ctx, dc)
			return durableturn.EncodeOutcome(o.text, o.failed)
		})
		b.Go(func() {
			defer c.Done() // replayed (or not started): it announces nothing
			if err != nil {
				outcomes[i] = callOutcome{text: hosterr.MsgOperatorFailure.String(), failed: true}
				return
			}
			o := durableturn.DecodeOutcome(<-ch, hosterr.MsgOperatorFailure.String())
			outcomes[i] = callOutcome{text: o.Text, failed: o.Failed}
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
	args := json.RawMessage(strings.TrimSpace(tc.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	modelError := func(text string) callOutcome {
		e := base
		e.Type = EventToolResult
		isErr := true
		e.IsError = &isErr
		e.Content = []mcp.Content{mcp.NewTextContent(text)}
		emit(e)
		return callOutcome{text: text, failed: true}
	}

	ref, known := view.Lookup(tc.Name)
	base.Server, base.Tool = ref.Server, ref.Tool // every event of the call names its tool
	call := base
	call.Type = EventToolCall
	if json.Valid(args) {
		call.Arguments = args
	} else {
		quoted, _ := json.Marshal(string(args))
		call.Arguments = quoted
	}
	emit(call)
	if !known {
		return modelError(fmt.Sprintf("Unknown tool %q. Call only the tools you were given.", hosterr.Truncate(h.redactor.Redact(tc.Name), 80)))
	}
	if dc != nil && dc.tainted {
		// Replayed from the checkpoint, which holds the arguments masked:
		// the model's own held a protected value, refused as at first.
		return modelError(hosterr.MsgSecretInArgs.String())
	}

	res, err := s.callTool(ctx, ref.Server, ref.Tool, args,
		callInfo{id: tc.ID, exposedName: tc.Name, step: step, emit: emit, checkSchema: true, fromModel: true, durable: dc, conversation: conv})
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
	e := base
	e.Type = EventToolResult
	isErr := res.IsError()
	e.IsError = &isErr
	e.Content = res.Result.Content
	e.Labels = risk.LabelNames(res.Labels)
	emit(e)
	if isErr {
		text = "The tool reported an error:\n" + text
	}
	text = results.LabelNotice(res.Labels) + text
	return callOutcome{text: results.ModelText(text, h.maxModelResult), failed: isErr}
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
