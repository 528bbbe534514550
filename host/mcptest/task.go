package mcptest

import (
	"crypto/rand"
	"encoding/hex"
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

// TasksExtension is the MCP Tasks extension identifier (2026-07-28).
const TasksExtension = "io.modelcontextprotocol/tasks"

// maxServerTasks bounds the tasks one server keeps.
const maxServerTasks = 1000

// taskStep is the pace of a listened-to Notify task.
const taskStep = 5 * time.Millisecond

// serverTask is one task's state.
type serverTask struct {
	mu          sync.Mutex
	id          string
	tool        *toolset.Tool
	args        map[string]json.RawMessage
	secureArgs  map[string]json.RawMessage
	b           TaskBehaviour
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
	err    *RPCError
	// listeners are the subscriptions/listen streams that name the task
	// (Notify); driving: its goroutine advances it.
	listeners []*subscriber
	driving   bool
}

// notifyingTasks are the Notify tasks of ids.
func (s *Server) notifyingTasks(ids []string) []*serverTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*serverTask
	for _, id := range ids {
		if st := s.tasks[id]; st != nil && st.b.Notify {
			out = append(out, st)
		}
	}
	return out
}

func (st *serverTask) listen(sub *subscriber) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listeners = append(st.listeners, sub)
}

func (st *serverTask) unlisten(sub *subscriber) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.listeners = slices.DeleteFunc(st.listeners, func(l *subscriber) bool { return l == sub })
}

// drive starts advancing a listened-to task on its own (st.mu held).
func (st *serverTask) drive() {
	if st.driving || len(st.listeners) == 0 || st.terminal() || (st.outstanding != "" && st.apply == nil) {
		return
	}
	st.driving = true
	go func() {
		for {
			time.Sleep(taskStep)
			st.mu.Lock()
			if len(st.listeners) == 0 {
				st.driving = false
				st.mu.Unlock()
				return
			}
			st.advance()
			w := st.wire()
			subs := slices.Clone(st.listeners)
			stop := st.terminal() || (st.outstanding != "" && st.apply == nil)
			if stop {
				st.driving = false
			}
			st.mu.Unlock()
			for _, sub := range subs {
				params := maps.Clone(w)
				params["_meta"] = map[string]any{wire.MetaSubscriptionID: sub.subscriptionID}
				_ = sub.send(wire.NewNotification("notifications/tasks", params))
			}
			if stop {
				return
			}
		}
	}()
}

// taskExtensionServed reports whether a served tool runs as a task, so the
// server advertises the extension.
func (s *Server) taskExtensionServed() bool {
	for _, t := range s.currentTools().Tools {
		if t.Test.Task != nil {
			return true
		}
	}
	return false
}

func declaresTasks(m requestMeta) bool {
	v, ok := m.extensions[TasksExtension]
	return ok && strings.TrimSpace(string(v)) != "null"
}

func missingTasksError() *RPCError {
	return wire.WithData(wire.Errorf(CodeMissingCapability, "Missing required client capability: %s", TasksExtension), map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{TasksExtension: map[string]any{}}},
	})

}

// createTask answers a task tool's call with a task handle.
func (s *Server) createTask(x *exchange, t *toolset.Tool, args, secureArgs map[string]json.RawMessage) reply {
	if x.modern && !declaresTasks(x.meta) || !x.modern && !legacyTaskAugmented(x) {
		return reply{err: missingTasksError(), toolError: true}
	}
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	now := time.Now().UTC().Format(time.RFC3339Nano)
	st := &serverTask{id: "task-" + hex.EncodeToString(id), tool: t, args: args, secureArgs: secureArgs,
		b: *t.Test.Task, created: now, updated: now, status: "working", message: "started"}
	s.mu.Lock()
	if s.tasks == nil {
		s.tasks = map[string]*serverTask{}
	}
	if len(s.tasks) >= maxServerTasks {
		s.mu.Unlock()
		return errorReply(wire.Errorf(CodeInternalError, "too many tasks"))
	}
	s.tasks[st.id] = st
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	if !x.modern {
		// 2025-11-25: CreateTaskResult is {task}.
		return reply{result: map[string]any{"task": st.legacyWire()}}
	}
	w := st.wire()
	w["resultType"] = "task"
	return reply{result: w}
}

// legacyTaskAugmented reports a 2025-11-25 tools/call with params.task.
func legacyTaskAugmented(x *exchange) bool {
	var p struct {
		Task json.RawMessage `json:"task"`
	}
	return json.Unmarshal(x.msg.Params, &p) == nil && len(p.Task) > 0 && string(p.Task) != "null"
}

// legacyWire is the task as the 2025-11-25 revision's tasks/get returns
// it: ttl and pollInterval, no result (tasks/result has it).
func (st *serverTask) legacyWire() map[string]any {
	w := map[string]any{"taskId": st.id, "status": st.status, "statusMessage": st.message,
		"createdAt": st.created, "lastUpdatedAt": st.updated, "ttl": int64(time.Hour / time.Millisecond)}
	if st.b.PollIntervalMs > 0 {
		w["pollInterval"] = st.b.PollIntervalMs
	}
	return w
}

// legacyTaskResult is the 2025-11-25 revision's tasks/result: the inputs
// the task still needs are asked with elicitation/create (without st.mu
// held while the client answers), then the task's end is answered.
func (s *Server) legacyTaskResult(x *exchange, st *serverTask) reply {
	st.mu.Lock()
	defer st.mu.Unlock()
	for st.status == "input_required" && st.outstanding != "" {
		params := st.inputRequest()
		params["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": st.id}}
		round := st.round
		st.mu.Unlock()
		answer, err := s.ask(x, "elicitation/create", params)
		st.mu.Lock()
		if err != nil {
			if x.ctx.Err() != nil {
				return reply{silent: true}
			}
			return errorReply(wire.Errorf(CodeInternalError, "asking for input %d: %v", round+1, err))
		}
		if st.round != round || st.status != "input_required" {
			continue // answered or ended meanwhile
		}
		var result struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if len(answer.Error) > 0 || json.Unmarshal(answer.Result, &result) != nil {
			var refused RPCError
			_ = json.Unmarshal(answer.Error, &refused)
			st.outstanding = ""
			st.err = wire.Errorf(CodeInternalError, "input %d was not answered: %s", round+1, refused.Message)
			st.set("failed", "input not answered")
			break
		}
		st.answer(result.Action, result.Content)
		// Run on to the next input or the end (Polls steps, then one).
		for i := 0; i <= st.b.Polls && !st.terminal() && st.status != "input_required"; i++ {
			st.advance()
		}
	}
	return st.legacyResult()
}

// legacyResult answers the 2025-11-25 revision's tasks/result of a task
// that ended: the tool's result or the task's error (this server answers
// one that has not ended with an error rather than wait).
func (st *serverTask) legacyResult() reply {
	switch st.status {
	case "completed":
		return reply{result: st.result}
	case "failed":
		return errorReply(st.err)
	case "cancelled":
		return errorReply(wire.Errorf(CodeInternalError, "the task was cancelled"))
	}
	return errorReply(wire.Errorf(CodeInternalError, "the task has not ended (this test server does not wait)"))
}

// findTask resolves a tasks/* request's task.
func (s *Server) findTask(x *exchange) (*serverTask, json.RawMessage, *RPCError) {
	if x.modern && !declaresTasks(x.meta) {
		return nil, nil, missingTasksError()
	}
	var p struct {
		TaskID         string          `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
	}
	if err := json.Unmarshal(x.msg.Params, &p); err != nil || p.TaskID == "" {
		return nil, nil, wire.Errorf(CodeInvalidParams, "missing taskId")
	}
	s.mu.Lock()
	st := s.tasks[p.TaskID]
	s.mu.Unlock()
	if st == nil {
		return nil, nil, wire.Errorf(CodeInvalidParams, "Failed to retrieve task: Task not found")
	}
	return st, p.InputResponses, nil
}

func (s *Server) handleTask(x *exchange) reply {
	st, responses, rpcErr := s.findTask(x)
	if rpcErr != nil {
		return errorReply(rpcErr)
	}
	if x.msg.Method == "tasks/result" && !x.modern {
		return s.legacyTaskResult(x, st)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	switch x.msg.Method {
	case "tasks/get":
		st.advance()
		if !x.modern {
			return reply{result: st.legacyWire()}
		}
		return reply{result: st.wire()}
	case "tasks/result":
		return st.legacyResult()
	case "tasks/update":
		st.update(responses)
		st.drive()
	case "tasks/cancel":
		if !st.terminal() {
			st.set("cancelled", "cancelled by request")
		}
	}
	return reply{result: map[string]any{}}
}

func (st *serverTask) terminal() bool {
	return st.status == "completed" || st.status == "failed" || st.status == "cancelled"
}

func (st *serverTask) set(status, message string) {
	st.status, st.message = status, message
	st.updated = time.Now().UTC().Format(time.RFC3339Nano)
}

// advance is one poll's step.
func (st *serverTask) advance() {
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
	if st.terminal() || st.outstanding != "" {
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
		st.result = toolResult(st.tool, st.args, st.secureArgs)
		if len(st.answers) > 0 {
			content, _ := st.result["content"].([]any)
			st.result["content"] = append(content, map[string]any{"type": "text", "text": "answers: " + strings.Join(st.answers, ", ")})
		}
		st.set("completed", "done")
	}
}

// update takes the answer to the outstanding input request; other keys
// are ignored, as the extension asks.
func (st *serverTask) update(raw json.RawMessage) {
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
		st.answer(r.Action, r.Content)
		return
	}
	st.apply, st.lag = func() { st.answer(r.Action, r.Content) }, st.b.Lag
}

// answer applies the answer to the outstanding input request.
func (st *serverTask) answer(action string, content map[string]any) {
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
func (st *serverTask) decides(round int) bool { return slices.Contains(st.b.Decide, round) }

// wire is the task as tasks/get returns it.
func (st *serverTask) wire() map[string]any {
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
			"params": st.inputRequest(),
		}}
	case "completed":
		w["result"] = st.result
	case "failed":
		w["error"] = st.err
	}
	return w
}

// inputRequest is the params of the elicitation/create the task's next
// input asks with.
func (st *serverTask) inputRequest() map[string]any {
	message := fmt.Sprintf("Input %d of %d for %s?", st.round+1, st.b.Inputs, st.tool.Name)
	properties := map[string]any{"answer": map[string]any{"type": "string", "default": "yes"}}
	if st.decides(st.round + 1) {
		message = fmt.Sprintf("Confirm step %d of %d of %s?", st.round+1, st.b.Inputs, st.tool.Name)
		properties = map[string]any{"confirm": map[string]any{"type": "boolean"}}
	}
	return map[string]any{
		"mode":            "form",
		"message":         message,
		"requestedSchema": map[string]any{"type": "object", "properties": properties},
	}
}
