// Package task owns the state of one task of mcptest's tasks (the x-test
// "task" behaviour): its steps, one per poll (or, while it is listened
// to, one every Step on its own), its input requests and their answers,
// and its wire forms in both revisions. The server finds tasks, answers
// the tasks/* requests and asks a 2025-11-25 task's inputs.
package task

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// Step is the pace of a listened-to Notify task.
const Step = 5 * time.Millisecond

// Task is one task's state. Callers hold its lock around every method but
// New, Listen and Unlisten.
type Task struct {
	sync.Mutex
	id          string
	toolName    string
	toolResult  func() map[string]any // the tool's usual result
	b           toolset.TaskBehaviour
	created     string
	updated     string
	status      string
	message     string
	round       int    // inputs answered
	polls       int    // polls since the last step
	outstanding string // the open input request's key
	answers     []string
	// apply is an answer taken but not yet visible, for lag more polls.
	apply  func()
	lag    int
	result map[string]any
	err    *wire.RPCError
	// listeners are the subscriptions/listen streams that name the task
	// (Notify); driving: its goroutine advances it.
	listeners []listener
	driving   bool
}

// listener is a stream the task's states go to: send gets each state.
type listener struct {
	key  any
	send func(state map[string]any)
}

// New is a started task of the tool toolName, run as b says; result is
// the tool's usual result, the task's when it completes.
func New(id, toolName string, b toolset.TaskBehaviour, result func() map[string]any) *Task {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	return &Task{id: id, toolName: toolName, toolResult: result, b: b,
		created: now, updated: now, status: "working", message: "started"}
}

// ID is the task's id.
func (st *Task) ID() string { return st.id }

// Behaviour is how the task runs.
func (st *Task) Behaviour() toolset.TaskBehaviour { return st.b }

// Status is the task's status: working, input_required, completed, failed
// or cancelled.
func (st *Task) Status() string { return st.status }

// Round is the number of inputs answered.
func (st *Task) Round() int { return st.round }

// Asking reports an open input request.
func (st *Task) Asking() bool { return st.outstanding != "" }

// Ended is the task's result (completed) or error (failed).
func (st *Task) Ended() (map[string]any, *wire.RPCError) { return st.result, st.err }

// Fail ends the task as failed with err.
func (st *Task) Fail(err *wire.RPCError, message string) {
	st.outstanding = ""
	st.err = err
	st.set("failed", message)
}

// Cancel ends the task as cancelled unless it has ended.
func (st *Task) Cancel() {
	if !st.Terminal() {
		st.set("cancelled", "cancelled by request")
	}
}

// RunOn advances the task to its next input or its end (Polls steps,
// then one), as it would be polled.
func (st *Task) RunOn() {
	for i := 0; i <= st.b.Polls && !st.Terminal() && st.status != "input_required"; i++ {
		st.Advance()
	}
}

// Listen sends the task's states, while it advances on its own, to send
// until Unlisten(key).
func (st *Task) Listen(key any, send func(state map[string]any)) {
	st.Lock()
	defer st.Unlock()
	st.listeners = append(st.listeners, listener{key: key, send: send})
}

// Unlisten stops what Listen(key) started.
func (st *Task) Unlisten(key any) {
	st.Lock()
	defer st.Unlock()
	st.listeners = slices.DeleteFunc(st.listeners, func(l listener) bool { return l.key == key })
}

// Drive starts advancing a listened-to task on its own.
func (st *Task) Drive() {
	if st.driving || len(st.listeners) == 0 || st.Terminal() || (st.outstanding != "" && st.apply == nil) {
		return
	}
	st.driving = true
	go func() {
		for {
			time.Sleep(Step)
			st.Lock()
			if len(st.listeners) == 0 {
				st.driving = false
				st.Unlock()
				return
			}
			st.Advance()
			w := st.Wire()
			subs := slices.Clone(st.listeners)
			stop := st.Terminal() || (st.outstanding != "" && st.apply == nil)
			if stop {
				st.driving = false
			}
			st.Unlock()
			for _, l := range subs {
				l.send(maps.Clone(w))
			}
			if stop {
				return
			}
		}
	}()
}

// LegacyWire is the task as the 2025-11-25 revision's tasks/get returns
// it: ttl and pollInterval, no result (tasks/result has it).
func (st *Task) LegacyWire() map[string]any {
	w := map[string]any{"taskId": st.id, "status": st.status, "statusMessage": st.message,
		"createdAt": st.created, "lastUpdatedAt": st.updated, "ttl": int64(time.Hour / time.Millisecond)}
	if st.b.PollIntervalMs > 0 {
		w["pollInterval"] = st.b.PollIntervalMs
	}
	return w
}

// Terminal reports a task that ended.
func (st *Task) Terminal() bool {
	return st.status == "completed" || st.status == "failed" || st.status == "cancelled"
}

func (st *Task) set(status, message string) {
	st.status, st.message = status, message
	st.updated = time.Now().UTC().Format(time.RFC3339Nano)
}

// Advance is one poll's step.
func (st *Task) Advance() {
	if st.apply != nil {
		if st.lag > 0 {
			st.lag--
			return
		}
		apply := st.apply
		st.apply = nil
		apply()
		return
	}
	if st.Terminal() || st.outstanding != "" {
		return
	}
	st.polls++
	if st.polls <= st.b.Polls {
		msg := fmt.Sprintf("step %d", st.polls)
		if st.b.Message != "" {
			msg = st.b.Message
		}
		st.set("working", msg)
		return
	}
	st.polls = 0
	switch {
	case st.round < st.b.Inputs:
		st.outstanding = fmt.Sprintf("input-%d", st.round+1)
		st.set("input_required", fmt.Sprintf("waiting for input %d of %d", st.round+1, st.b.Inputs))
	case st.b.Forever:
		st.set("working", "still working")
	case st.b.FailCode != 0:
		st.err = wire.Errorf(st.b.FailCode, "task failed on purpose")
		st.set("failed", "failed on purpose")
	default:
		st.result = st.toolResult()
		if len(st.answers) > 0 {
			content, _ := st.result["content"].([]any)
			st.result["content"] = append(content, map[string]any{"type": "text", "text": "answers: " + strings.Join(st.answers, ", ")})
		}
		st.set("completed", "done")
	}
}

// Update takes the answer to the outstanding input request; other keys
// are ignored, as the extension asks.
func (st *Task) Update(raw json.RawMessage) {
	var responses map[string]struct {
		Action  string         `json:"action"`
		Content map[string]any `json:"content"`
	}
	if json.Unmarshal(raw, &responses) != nil || st.outstanding == "" {
		return
	}
	r, ok := responses[st.outstanding]
	if !ok || st.apply != nil {
		return
	}
	if st.b.Lag == 0 {
		st.Answer(r.Action, r.Content)
		return
	}
	st.apply, st.lag = func() { st.Answer(r.Action, r.Content) }, st.b.Lag
}

// Answer applies the answer to the outstanding input request.
func (st *Task) Answer(action string, content map[string]any) {
	st.outstanding = ""
	if action != "accept" {
		st.result = map[string]any{"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("input %d %s", st.round+1, action)}}, "isError": true}
		st.set("completed", "input "+action)
		return
	}
	if st.decides(st.round + 1) {
		st.answers = append(st.answers, fmt.Sprintf("confirm=%v", content["confirm"]))
	} else {
		st.answers = append(st.answers, fmt.Sprint(content["answer"]))
	}
	st.round++
	st.set("working", fmt.Sprintf("got input %d", st.round))
}

// decides reports whether input round (1-based) asks for a decision.
func (st *Task) decides(round int) bool { return slices.Contains(st.b.Decide, round) }

// Wire is the task as tasks/get returns it.
func (st *Task) Wire() map[string]any {
	w := map[string]any{
		"taskId":        st.id,
		"status":        st.status,
		"statusMessage": st.message,
		"createdAt":     st.created,
		"lastUpdatedAt": st.updated,
		"ttlMs":         int64(time.Hour / time.Millisecond),
	}
	if st.b.PollIntervalMs > 0 {
		w["pollIntervalMs"] = st.b.PollIntervalMs
	}
	switch st.status {
	case "input_required":
		w["inputRequests"] = map[string]any{st.outstanding: map[string]any{
			"method": "elicitation/create",
			"params": st.InputRequest(),
		}}
	case "completed":
		w["result"] = st.result
	case "failed":
		w["error"] = st.err
	}
	return w
}

// InputRequest is the params of the elicitation/create the task's next
// input asks with.
func (st *Task) InputRequest() map[string]any {
	message := fmt.Sprintf("Input %d of %d for %s?", st.round+1, st.b.Inputs, st.toolName)
	properties := map[string]any{"answer": map[string]any{"type": "string", "default": "yes"}}
	if st.decides(st.round + 1) {
		message = fmt.Sprintf("Confirm step %d of %d of %s?", st.round+1, st.b.Inputs, st.toolName)
		properties = map[string]any{"confirm": map[string]any{"type": "boolean"}}
	}
	return map[string]any{
		"mode":            "form",
		"message":         message,
		"requestedSchema": map[string]any{"type": "object", "properties": properties},
	}
}
