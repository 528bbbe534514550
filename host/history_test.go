package host

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// recordingModel answers "ok" and keeps every request's messages.
type recordingModel struct {
	mu   sync.Mutex
	seen [][]model.Message
}

func (m *recordingModel) llm() model.LLM {
	return model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.seen = append(m.seen, append([]model.Message(nil), req.Messages...))
		return model.Message{Content: "ok"}, model.Usage{TotalTokens: 1}, nil
	})
}

func TestHistorySeedsAndKeepsTheConversation(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	rec := &recordingModel{}
	h.model = rec.llm()
	hist := NewMemoryHistory()
	seed := []model.Message{{Role: model.RoleUser, Content: "earlier question"}, {Role: model.RoleAssistant, Content: "earlier answer"}}
	if err := hist.Append(context.Background(), "s1", seed...); err != nil {
		t.Fatal(err)
	}

	s := h.NewSession(SessionOptions{ID: "s1", History: hist})
	collect(t, s, context.Background(), "new question", TurnOptions{})
	s.Close()

	if len(rec.seen) != 1 || len(rec.seen[0]) != 3 || rec.seen[0][0].Content != "earlier question" || rec.seen[0][2].Content != "new question" {
		t.Fatalf("the model was sent %+v", rec.seen)
	}
	stored, _ := hist.Load(context.Background(), "s1")
	if len(stored) != 4 || stored[3].Role != model.RoleAssistant || stored[3].Content != "ok" {
		t.Fatalf("history after the turn: %+v", stored)
	}

	// A new Session value with the same id and History (a restarted
	// process) continues the conversation.
	again := h.NewSession(SessionOptions{ID: "s1", History: hist})
	collect(t, again, context.Background(), "third question", TurnOptions{})
	if got := rec.seen[1]; len(got) != 5 || got[3].Content != "ok" || got[4].Content != "third question" {
		t.Fatalf("the restored session sent %+v", got)
	}
	if tr := again.Transcript(); len(tr) != 6 {
		t.Errorf("transcript has %d messages, want 6", len(tr))
	}
}

func TestHistoryAnswersCallsLeftWithoutResults(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	rec := &recordingModel{}
	h.model = rec.llm()
	hist := NewMemoryHistory()
	// The process stopped while c9 ran: the call is in the transcript, its
	// result is not.
	_ = hist.Append(context.Background(), "s2",
		model.Message{Role: model.RoleUser, Content: "delete it"},
		model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c9", Name: "db__delete_rows", Arguments: `{}`}}},
	)
	s := h.NewSession(SessionOptions{ID: "s2", History: hist})
	collect(t, s, context.Background(), "did it work?", TurnOptions{})

	sent := rec.seen[0]
	if len(sent) != 4 || sent[2].Role != model.RoleTool || sent[2].ToolCallID != "c9" || sent[2].Content != hosterr.InterruptedCallResult {
		t.Fatalf("the model was sent %+v", sent)
	}
	stored, _ := hist.Load(context.Background(), "s2")
	if stored[2].ToolCallID != "c9" {
		t.Errorf("the repair was not kept in the history: %+v", stored)
	}
}

type failingHistory struct{}

func (failingHistory) Load(context.Context, string) ([]model.Message, error) { return nil, nil }

func (failingHistory) Append(context.Context, string, ...model.Message) error {
	return errors.New("store is down")
}

func TestHistoryFailureStopsTheTurn(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	rec := &recordingModel{}
	h.model = rec.llm()
	s := h.NewSession(SessionOptions{History: failingHistory{}})
	events := collect(t, s, context.Background(), "hello", TurnOptions{})
	errs := ofType(events, EventError)
	if len(errs) != 1 || !strings.Contains(errs[0].Error, "saving the conversation") {
		t.Fatalf("errors: %+v", errs)
	}
	if len(rec.seen) != 0 {
		t.Error("the model was asked although the conversation could not be saved")
	}
	if end := events[len(events)-1]; end.Reason != EndError {
		t.Errorf("end: %+v", end)
	}
}

// In memory as in a durable turn, a prompt holding a protected value is
// sent to the model masked, and the History keeps what the model saw.
func TestPromptIsMaskedAsTheModelSeesIt(t *testing.T) {
	const secret = "tok-CANARY-prompt-31"
	h, _, _ := testHost(t, "", mcptest.Options{})
	rec := &recordingModel{}
	h.model = rec.llm()
	h.redactor.Add(secret) // resolved earlier in the session
	hist := NewMemoryHistory()
	s := h.NewSession(SessionOptions{ID: "s3", History: hist})
	collect(t, s, context.Background(), "use "+secret+" please", TurnOptions{})
	if len(rec.seen) != 1 || !strings.Contains(rec.seen[0][0].Content, "please") || strings.Contains(rec.seen[0][0].Content, secret) {
		t.Fatalf("the model was sent %+v", rec.seen)
	}
	stored, _ := hist.Load(context.Background(), "s3")
	for _, m := range append(stored, s.Transcript()...) {
		if strings.Contains(m.Content, secret) {
			t.Fatalf("the conversation holds the value: %+v", m)
		}
	}
}
