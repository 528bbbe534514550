package turn

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/model"
)

func TestLimits(t *testing.T) {
	for _, tc := range []struct{ steps, repeats, wantSteps, wantRepeats int }{
		{0, 0, DefaultMaxSteps, DefaultMaxRepeatedFailures},
		{-1, -5, DefaultMaxSteps, DefaultMaxRepeatedFailures},
		{7, 2, 7, 2},
	} {
		if s, r := Limits(tc.steps, tc.repeats); s != tc.wantSteps || r != tc.wantRepeats {
			t.Errorf("Limits(%d, %d) = %d, %d; want %d, %d", tc.steps, tc.repeats, s, r, tc.wantSteps, tc.wantRepeats)
		}
	}
}

// The same call with its arguments in another key order is the same
// failing call.
func TestRepeats(t *testing.T) {
	r := NewRepeats(2)
	if n, stop := r.Fail("a", `{"x":1,"y":2}`); n != 1 || stop {
		t.Fatalf("first failure = %d, %v", n, stop)
	}
	if n, stop := r.Fail("b", `{"x":1,"y":2}`); n != 1 || stop {
		t.Fatalf("another tool's failure = %d, %v", n, stop)
	}
	if n, stop := r.Fail("a", ` {"y":2, "x":1}`); n != 2 || !stop {
		t.Fatalf("repeated failure = %d, %v; want 2, true", n, stop)
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"b":1,"a":"<x>"}`, "{\"a\":\"<x>\",\"b\":1}\n"},
		{`not json`, `not json`},
	} {
		if got := CanonicalJSON(tc.in); got != tc.want {
			t.Errorf("CanonicalJSON(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSettle(t *testing.T) {
	msg := Settle(model.Message{ToolCalls: []model.ToolCall{{ID: "given"}, {}}}, func() string { return "new" })
	if msg.Role != model.RoleAssistant || msg.ToolCalls[0].ID != "given" || msg.ToolCalls[1].ID != "new" {
		t.Fatalf("Settle = %+v", msg)
	}
}

func TestRepair(t *testing.T) {
	msgs := []model.Message{
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1"}, {ID: "c2"}}},
		{Role: model.RoleTool, ToolCallID: "c1"},
	}
	got := Repair(msgs)
	if len(got) != 1 || got[0].ToolCallID != "c2" || got[0].Content != hosterr.InterruptedCallResult {
		t.Fatalf("Repair = %+v", got)
	}
	if Repair(msgs[1:]) != nil {
		t.Fatal("nothing to repair, yet messages")
	}
}

func TestConversationLastUserMessage(t *testing.T) {
	msgs := []model.Message{{Role: model.RoleUser, Content: "first"}, {Role: model.RoleUser, Content: "last"}, {Role: model.RoleAssistant, Content: "x"}}
	c := Conversation(msgs, "said", func(s string) string { return "[" + s + "]" })
	if c.UserMessage != "[last]" || c.ModelText != "[said]" {
		t.Fatalf("Conversation = %+v", c)
	}
}

// Every call's first event is handed on before any call goes past its
// own, and every event reaches the consumer.
func TestBatchAnnouncesFirst(t *testing.T) {
	const n = 4
	b := NewBatch[string](n)
	for i := range n {
		c := b.Call()
		b.Go(func() {
			defer c.Done()
			if i == n-1 {
				return // a call that announces nothing
			}
			c.Emit("call")
			c.Emit("result")
		})
	}
	var got []string
	b.Forward(func(e string) { got = append(got, e) })
	want := []string{"call", "call", "call", "result", "result", "result"}
	if !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestRelay(t *testing.T) {
	r := NewRelay[int]()
	var got []int
	var mu sync.Mutex
	r.Run(func(e int) { mu.Lock(); got = append(got, e); mu.Unlock() }, func() {
		for i := range 3 {
			r.Send(i)
		}
	})
	if !slices.Equal(got, []int{0, 1, 2}) {
		t.Fatalf("relayed %v", got)
	}
}

type memHistory struct {
	*MemoryHistory
	at []int
}

func (m *memHistory) AppendAt(ctx context.Context, id string, at int, msgs ...model.Message) error {
	m.at = append(m.at, at)
	return m.Append(ctx, id, msgs...)
}

func TestTranscript(t *testing.T) {
	ctx := context.Background()
	h := &memHistory{MemoryHistory: NewMemoryHistory()}
	_ = h.Append(ctx, "s", model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c"}}})
	tr := Transcript{History: h, Seq: h}
	if err := tr.Load(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if len(tr.Msgs) != 2 || !slices.Equal(h.at, []int{1}) {
		t.Fatalf("loaded %d messages, appended at %v; want the repair at 1", len(tr.Msgs), h.at)
	}
	if err := tr.Reload(ctx, "s", 1); err != nil || len(tr.Msgs) != 1 {
		t.Fatalf("Reload = %v, %d messages", err, len(tr.Msgs))
	}
	if err := tr.Reload(ctx, "s", 3); err == nil {
		t.Fatal("a reload past the stored conversation succeeded")
	}
	if err := (&Transcript{History: failing{}}).Load(ctx, "s"); !errors.Is(err, errFailing) {
		t.Fatalf("Load = %v", err)
	}
}

var errFailing = errors.New("failing")

type failing struct{}

func (failing) Load(context.Context, string) ([]model.Message, error)  { return nil, errFailing }
func (failing) Append(context.Context, string, ...model.Message) error { return errFailing }
