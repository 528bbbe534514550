package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcptest"
)

// stoppingEngine is a Durability whose AwaitTurn answers as an engine that
// is stopping does: at once, with an error, while the turn's run (started
// by it, as a recovered turn) is still going and has events to deliver.
type stoppingEngine struct {
	run     DurableTurnFunc
	hist    History
	inStep  chan struct{}
	release chan struct{}
	runDone chan struct{}
}

func (e *stoppingEngine) Start(run DurableTurnFunc) error { e.run = run; return nil }
func (e *stoppingEngine) RunTurn(context.Context, string, TurnRecord) error {
	return errors.New("not in this test")
}
func (e *stoppingEngine) PendingTurns(_ context.Context, s string) ([]string, error) {
	return []string{s + ".0123456789abcdef.01234567"}, nil
}
func (e *stoppingEngine) History() History { return e.hist }

func (e *stoppingEngine) AwaitTurn(_ context.Context, id string) error {
	go func() {
		defer close(e.runDone)
		_ = e.run(context.Background(), e, TurnRecord{SessionID: "sr", Prompt: "go"})
	}()
	<-e.inStep
	go func() {
		time.Sleep(100 * time.Millisecond) // after AwaitTurn has answered
		close(e.release)
	}()
	return errors.New("the engine stopped")
}

// Steps: the first step blocks until released, and fails then (the
// engine is gone); the turn ends with its events still to deliver.
func (e *stoppingEngine) TurnID() string { return "sr.0123456789abcdef.01234567" }
func (e *stoppingEngine) Step(ctx context.Context, _ string, _ StepFunc) (json.RawMessage, bool, error) {
	select {
	case e.inStep <- struct{}{}:
	default:
	}
	<-e.release
	return nil, false, errors.New("the engine stopped")
}
func (e *stoppingEngine) Go(context.Context, string, StepFunc) (<-chan StepOutcome, error) {
	return nil, errors.New("not in this test")
}
func (e *stoppingEngine) Sent(context.Context, string) (int, error) { return 0, nil }

// A resumed turn whose engine answers AwaitTurn before the turn's run has
// returned still delivers the run's events, and nothing is sent after the
// forwarding ends (it used to close its channel under the run: a data
// race, and a send on a closed channel).
func TestResumeOutlivesAnEarlyAwaitTurn(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	h.model = (&recordingModel{}).llm()
	e := &stoppingEngine{hist: NewMemoryHistory(), inStep: make(chan struct{}, 1), release: make(chan struct{}), runDone: make(chan struct{})}
	h.durable = e
	if err := e.Start(h.runDurableTurn); err != nil {
		t.Fatal(err)
	}
	s := h.NewSession(SessionOptions{ID: "sr"})
	var events []Event
	for ev := range s.Resume(context.Background()) {
		events = append(events, ev)
	}
	// The run ends (before the fix it then sent on the closed channel).
	select {
	case <-e.runDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn's run did not end")
	}
	ends := 0
	for _, ev := range events {
		if ev.Type == EventSessionEnd {
			ends++
		}
	}
	if ends != 1 || events[len(events)-1].Type != EventSessionEnd {
		t.Fatalf("events %+v, want the run's, ending with one session_end", events)
	}
}
