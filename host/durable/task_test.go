package durable_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

// taskToolsJSON: write_note (not idempotent) runs as an MCP task that
// takes a few polls.
const taskToolsJSON = `[
 {"name": "write_note", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
  "x-test": {"text": "note written by the task", "task": {"polls": 3, "pollIntervalMs": 1}}}
]`

// TestTaskOutlivesTheProcess: the process stops while the task a call
// created runs on the server; the resumed turn follows the same task to
// its result, without sending the call again or cancelling the task, where
// without the task it could only say the call may or may not have run.
func TestTaskOutlivesTheProcess(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServerWith(t, taskToolsJSON)
		m := &scriptModel{plan: calls("write_note", "1")}
		store := b.openApprovals(t)
		const id = "task-outlives"
		p := start(t, b, srv, m, store, time.Minute, "task", nil)
		done := runInBackground(p.session(id), "go")
		waitFor(t, p.crash.hit, "the crash point")
		p.kill()
		waitFor(t, done, "the killed turn's events")

		p2 := start(t, b, srv, m, store, time.Minute, "", nil)
		events := drain(t, p2.session(id).Resume(context.Background()))
		end := lastEnd(t, events)
		if end.Reason != host.EndDone || !strings.Contains(end.Result, "note written by the task") {
			t.Fatalf("end %+v, want the task's result\n%s", end, describe(events))
		}
		rec := srv.srv.Recording()
		if n := len(rec.Messages("tools/call")); n != 1 {
			t.Errorf("%d tools/call, want 1 (the resumed turn follows the task)", n)
		}
		if n := len(rec.Messages("tasks/cancel")); n != 0 {
			t.Errorf("%d tasks/cancel, want none: the stopped process's task was the resumed turn's", n)
		}
		var resumed bool
		for _, e := range events {
			if e.Type == host.EventToolTask && e.TaskStatus == "completed" {
				resumed = true
			}
		}
		if !resumed {
			t.Errorf("no tool_task completed event in the resumed turn\n%s", describe(events))
		}
	})
}

// TestInterruptedTurnCancelsItsTask: a durable turn whose caller goes (an
// interrupted turn, recorded as finished) cancels its call's task: nobody
// would follow it.
func TestInterruptedTurnCancelsItsTask(t *testing.T) {
	const tools = `[{"name": "write_note", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
  "x-test": {"task": {"forever": true, "pollIntervalMs": 1}}}]`
	backends(t, func(t *testing.T, b backend) {
		srv := newServerWith(t, tools)
		p := start(t, b, srv, &scriptModel{plan: calls("write_note", "1")}, b.openApprovals(t), time.Minute, "", nil)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan []host.Event, 1)
		go func() {
			var events []host.Event
			for e := range p.session("interrupted-task").Turn(ctx, "go", host.TurnOptions{}) {
				events = append(events, e)
			}
			done <- events
		}()
		rec := srv.srv.Recording()
		deadline := time.Now().Add(20 * time.Second)
		for len(rec.Messages("tasks/get")) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the task was never polled")
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		events := waitFor(t, done, "the interrupted turn's events")
		if end := lastEnd(t, events); end.Reason != host.EndInterrupted {
			t.Errorf("end %+v, want interrupted", end)
		}
		if n := len(rec.Messages("tasks/cancel")); n != 1 {
			t.Errorf("%d tasks/cancel, want 1\n%s", n, describe(events))
		}
	})
}
