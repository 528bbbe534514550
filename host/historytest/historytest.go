// Package historytest is the conformance suite of host.History and
// host.SequencedHistory implementations: every store of conversations
// (the in-memory one, the durable store on SQLite and PostgreSQL, a
// backend's own) runs it.
package historytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
)

// Run checks the History behaviours: an unknown session has no messages;
// appends keep their order, across calls, and every field of a message;
// sessions are separate; concurrent appends to different sessions do not
// mix.
func Run(t *testing.T, open func(t *testing.T) host.History) {
	ctx := context.Background()
	t.Run("empty", func(t *testing.T) {
		h := open(t)
		msgs, err := h.Load(ctx, "nobody")
		if err != nil || len(msgs) != 0 {
			t.Fatalf("Load of an unknown session: %v, %v", msgs, err)
		}
	})
	t.Run("order and fields", func(t *testing.T) {
		h := open(t)
		want := conversation()
		if err := h.Append(ctx, "s1", want[:2]...); err != nil {
			t.Fatal(err)
		}
		if err := h.Append(ctx, "s1", want[2:]...); err != nil {
			t.Fatal(err)
		}
		got, err := h.Load(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("Load (-want +got):\n%s", d)
		}
	})
	t.Run("sessions are separate", func(t *testing.T) {
		h := open(t)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() {
				id := fmt.Sprintf("s%d", i)
				for j := range 5 {
					if err := h.Append(ctx, id, model.Message{Role: model.RoleUser, Content: fmt.Sprintf("%s-%d", id, j)}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for i := range 8 {
			id := fmt.Sprintf("s%d", i)
			got, err := h.Load(ctx, id)
			if err != nil || len(got) != 5 {
				t.Fatalf("%s: %d messages, %v", id, len(got), err)
			}
			for j, m := range got {
				if m.Content != fmt.Sprintf("%s-%d", id, j) {
					t.Fatalf("%s[%d] = %q", id, j, m.Content)
				}
			}
		}
	})
}

// RunSequenced checks AppendAt beyond Run: an append at a stored position
// changes nothing (a replay), an append that overlaps the end stores only
// what is new, and an append beyond the end is refused.
func RunSequenced(t *testing.T, open func(t *testing.T) host.SequencedHistory) {
	Run(t, func(t *testing.T) host.History { return open(t) })
	ctx := context.Background()
	t.Run("replayed appends change nothing", func(t *testing.T) {
		h := open(t)
		msgs := conversation()
		if err := h.AppendAt(ctx, "s", 0, msgs[:3]...); err != nil {
			t.Fatal(err)
		}
		// A replay appends the same messages at the same positions, and an
		// append overlapping the end adds only the new ones.
		if err := h.AppendAt(ctx, "s", 0, msgs[:3]...); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendAt(ctx, "s", 2, msgs[2:]...); err != nil {
			t.Fatal(err)
		}
		got, err := h.Load(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(msgs, got); d != "" {
			t.Fatalf("Load (-want +got):\n%s", d)
		}
	})
	t.Run("a gap is refused", func(t *testing.T) {
		h := open(t)
		if err := h.AppendAt(ctx, "s", 0, conversation()[0]); err != nil {
			t.Fatal(err)
		}
		if err := h.AppendAt(ctx, "s", 2, conversation()[1]); err == nil {
			t.Fatal("an append beyond the end was accepted")
		}
		got, err := h.Load(ctx, "s")
		if err != nil || len(got) != 1 {
			t.Fatalf("after a refused append: %d messages, %v", len(got), err)
		}
		if err := h.AppendAt(ctx, "s", -1, conversation()[1]); err == nil {
			t.Fatal("a negative position was accepted")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		h := open(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := h.AppendAt(cctx, "s", 0, conversation()[0])
		if err == nil {
			t.Fatal("an append with a cancelled context succeeded")
		}
		if !errors.Is(err, context.Canceled) {
			t.Logf("cancelled append: %v", err)
		}
	})
}

// conversation is a turn with every kind of message and field.
func conversation() []model.Message {
	return []model.Message{
		{Role: model.RoleUser, Content: "look up order 7 — «ünïcode» \"quoted\" \x01"},
		{Role: model.RoleAssistant, Content: "Looking.", ToolCalls: []model.ToolCall{
			{ID: "call_1", Name: "db__lookup", Arguments: `{"id":"7"}`},
			{ID: "call_2", Name: "db__lookup", Arguments: `not json`},
		}},
		{Role: model.RoleTool, ToolCallID: "call_1", Content: "order 7: shipped"},
		{Role: model.RoleTool, ToolCallID: "call_2", Content: "invalid arguments"},
		{Role: model.RoleAssistant, Content: "Order 7 shipped."},
	}
}
