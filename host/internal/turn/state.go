package turn

import (
	"context"
	"errors"
	"time"

	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/observe"
)

// State is a turn's bookkeeping: where its events go, its steps, usage
// and timing, the last model answer's finish and usage, and its end.
type State struct {
	// Emit delivers the turn's events; Redact masks protected values in
	// an error's text.
	Emit   func(event.Event)
	Redact func(string) string
	Usage  model.Usage
	Steps  int
	Start  time.Time
	// Result is the last assistant text of the turn.
	Result string

	// Observed ends the observer's turn (nil without an observer); Kind
	// is the error kind of a failed turn, Finish and Last the last model
	// answer's finish reason and usage.
	Observed func(observe.TurnEnd)
	Kind     hosterr.Kind
	Finish   string
	Last     model.Usage

	// Ended is set once session_end was emitted.
	Ended bool
	// API is the time spent in model requests.
	API time.Duration
}

// End ends the turn for reason: the observer's turn, then session_end.
func (t *State) End(reason string) {
	t.Ended = true
	u := t.Usage
	if t.Observed != nil {
		t.Observed(observe.TurnEnd{Reason: reason, Steps: t.Steps, InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, Kind: t.Kind})
	}
	ms, api := time.Since(t.Start).Milliseconds(), t.API.Milliseconds()
	t.Emit(event.Event{Type: event.SessionEnd, Reason: reason, Steps: t.Steps, Usage: &u, Result: t.Result, DurationMs: &ms, APIDurationMs: &api})
}

// Fail ends the turn with an error event of kind.
func (t *State) Fail(kind hosterr.Kind, err error) {
	t.Kind = kind
	t.Emit(event.Event{Type: event.Error, Kind: kind, Error: t.Redact(err.Error())})
	t.End(event.EndError)
}

// Deltas masks protected values in streamed text, even when one arrives
// in pieces (bindings.StreamRedactor).
type Deltas interface {
	Write(s string) string
	Flush() string
}

// Stream runs one model request on llm, forwarding streamed text through
// deltas as assistant_delta events, and returns the whole assistant
// message; the answer's usage is added to the turn's.
func (t *State) Stream(ctx context.Context, llm model.LLM, req *model.Request, deltas Deltas) (model.Message, error) {
	t.Finish, t.Last = "", model.Usage{}
	flush := func() {
		if rest := deltas.Flush(); rest != "" {
			t.Emit(event.Event{Type: event.AssistantDelta, Step: t.Steps, Text: rest})
		}
	}
	for resp, err := range llm.Generate(ctx, req) {
		if err != nil {
			flush()
			return model.Message{}, err
		}
		if resp.Partial {
			if d := deltas.Write(resp.Message.Content); d != "" {
				t.Emit(event.Event{Type: event.AssistantDelta, Step: t.Steps, Text: d})
			}
			continue
		}
		flush()
		t.Usage.Add(resp.Usage)
		t.Finish, t.Last = resp.FinishReason, resp.Usage
		return resp.Message, nil
	}
	flush()
	if err := ctx.Err(); err != nil {
		return model.Message{}, err
	}
	return model.Message{}, errors.New("the model client ended its answer without a final response")
}
