package mcptest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/agenthost/agenthost/host/mcptest/internal/task"
	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// TasksExtension is the MCP Tasks extension identifier (2026-07-28).
const TasksExtension = "io.modelcontextprotocol/tasks"

// maxServerTasks bounds the tasks one server keeps.
const maxServerTasks = 1000

// notifyingTasks are the Notify tasks of ids.
func (s *Server) notifyingTasks(ids []string) []*task.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*task.Task
	for _, id := range ids {
		if st := s.tasks[id]; st != nil && st.Behaviour().Notify {
			out = append(out, st)
		}
	}
	return out
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
	st := task.New("task-"+hex.EncodeToString(id), t.Name, *t.Test.Task, func() map[string]any { return toolResult(t, args, secureArgs) })
	s.mu.Lock()
	if s.tasks == nil {
		s.tasks = map[string]*task.Task{}
	}
	if len(s.tasks) >= maxServerTasks {
		s.mu.Unlock()
		return errorReply(wire.Errorf(CodeInternalError, "too many tasks"))
	}
	s.tasks[st.ID()] = st
	s.mu.Unlock()
	st.Lock()
	defer st.Unlock()
	if !x.modern {
		// 2025-11-25: CreateTaskResult is {task}.
		return reply{result: map[string]any{"task": st.LegacyWire()}}
	}
	w := st.Wire()
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

// legacyTaskResult is the 2025-11-25 revision's tasks/result: the inputs
// the task still needs are asked with elicitation/create (the task is not
// locked while the client answers), then the task's end is answered.
func (s *Server) legacyTaskResult(x *exchange, st *task.Task) reply {
	st.Lock()
	defer st.Unlock()
	for st.Status() == "input_required" && st.Asking() {
		params := st.InputRequest()
		params["_meta"] = map[string]any{"io.modelcontextprotocol/related-task": map[string]any{"taskId": st.ID()}}
		round := st.Round()
		st.Unlock()
		answer, err := s.ask(x, "elicitation/create", params)
		st.Lock()
		if err != nil {
			if x.ctx.Err() != nil {
				return reply{silent: true}
			}
			return errorReply(wire.Errorf(CodeInternalError, "asking for input %d: %v", round+1, err))
		}
		if st.Round() != round || st.Status() != "input_required" {
			continue // answered or ended meanwhile
		}
		var result struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		}
		if len(answer.Error) > 0 || json.Unmarshal(answer.Result, &result) != nil {
			var refused RPCError
			_ = json.Unmarshal(answer.Error, &refused)
			st.Fail(wire.Errorf(CodeInternalError, "input %d was not answered: %s", round+1, refused.Message), "input not answered")
			break
		}
		st.Answer(result.Action, result.Content)
		st.RunOn()
	}
	return legacyResult(st)
}

// legacyResult answers the 2025-11-25 revision's tasks/result of a task
// that ended: the tool's result or the task's error (this server answers
// one that has not ended with an error rather than wait).
func legacyResult(st *task.Task) reply {
	result, err := st.Ended()
	switch st.Status() {
	case "completed":
		return reply{result: result}
	case "failed":
		return errorReply(err)
	case "cancelled":
		return errorReply(wire.Errorf(CodeInternalError, "the task was cancelled"))
	}
	return errorReply(wire.Errorf(CodeInternalError, "the task has not ended (this test server does not wait)"))
}

// findTask resolves a tasks/* request's task.
func (s *Server) findTask(x *exchange) (*task.Task, json.RawMessage, *RPCError) {
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
	st.Lock()
	defer st.Unlock()
	switch x.msg.Method {
	case "tasks/get":
		st.Advance()
		if !x.modern {
			return reply{result: st.LegacyWire()}
		}
		return reply{result: st.Wire()}
	case "tasks/result":
		return legacyResult(st)
	case "tasks/update":
		st.Update(responses)
		st.Drive()
	case "tasks/cancel":
		st.Cancel()
	}
	return reply{result: map[string]any{}}
}
