package turn

import (
	"context"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/model"
)

// Answer is a step's model answer: Msg is what its calls run from, Masked
// what the conversation keeps (protected values masked), Tainted the
// calls refused for a protected value in their own arguments, Replayed
// whether it came from a durable turn's checkpoint.
type Answer struct {
	Msg, Masked model.Message
	Tainted     []bool
	Replayed    bool
}

// Outcome is what a tool call tells the model, as a durable turn
// checkpoints it.
type Outcome struct {
	Text   string `json:"text"`
	Failed bool   `json:"failed,omitempty"`
}

// ErrInterrupted is what Loop.Ask returns when the turn's context ended
// while the model was asked.
var ErrInterrupted = errors.New("the turn was interrupted")

// Loop is what the agent loop asks of the host that runs it.
type Loop interface {
	// Load loads the conversation before the turn's first request.
	Load(ctx context.Context) error
	// Append adds messages to the conversation.
	Append(ctx context.Context, msgs ...model.Message) error
	// Ask asks the model for the step's answer, or replays it.
	Ask(ctx context.Context) (Answer, error)
	// Calls runs the answer's tool calls; outcome i answers call i.
	Calls(ctx context.Context, a Answer) []Outcome
}

// Run runs the agent loop of one turn with prompt: the model is asked,
// the calls it asks for run and their results go back to it, until it
// answers without tool calls, the step bound is reached, the same failing
// call repeats too often, or ctx ends. The turn's end (session_end) is
// always emitted through t.
func Run(ctx context.Context, t *State, l Loop, opts Options, prompt string) {
	maxSteps, maxRepeats := Limits(opts.MaxSteps, opts.MaxRepeatedFailures)
	if err := l.Load(ctx); err != nil {
		t.Fail(hosterr.KindInternal, err)
		return
	}
	if err := l.Append(ctx, model.Message{Role: model.RoleUser, Content: prompt}); err != nil {
		t.Fail(hosterr.KindInternal, err)
		return
	}
	failures := NewRepeats(maxRepeats)
	for {
		if t.Steps >= maxSteps {
			t.End(event.EndMaxSteps)
			return
		}
		t.Steps++
		a, err := l.Ask(ctx)
		switch {
		case err == ErrInterrupted:
			t.End(event.EndInterrupted)
			return
		case err != nil:
			t.Fail(hosterr.KindInternal, err)
			return
		}
		// The conversation is sent again with every request (and handed
		// to the session's History): what the model said is kept with
		// protected values masked. Its tool calls run from the original
		// arguments, and are refused when they hold such a value.
		if err := l.Append(ctx, a.Masked); err != nil {
			t.Fail(hosterr.KindInternal, err)
			return
		}
		msg := a.Msg
		if msg.Content != "" {
			t.Result = msg.Content
			if !a.Replayed {
				t.Emit(event.Event{Type: event.Assistant, Step: t.Steps, Text: msg.Content})
			}
		}
		if len(msg.ToolCalls) == 0 {
			t.End(event.EndDone)
			return
		}
		outcomes := l.Calls(ctx, a)
		results := ToolResults(msg.ToolCalls, func(i int) string { return outcomes[i].Text })
		if err := l.Append(ctx, results...); err != nil {
			t.Fail(hosterr.KindInternal, err)
			return
		}
		if ctx.Err() != nil {
			t.End(event.EndInterrupted)
			return
		}
		for i, tc := range msg.ToolCalls {
			if !outcomes[i].Failed {
				continue
			}
			if n, stop := failures.Fail(tc.Name, tc.Arguments); stop {
				t.Fail(hosterr.KindToolError, fmt.Errorf("the model repeated the same failing call to %s %d times; stopping the turn", tc.Name, n))
				return
			}
		}
	}
}
