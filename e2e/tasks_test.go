package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// taskServer is an mcpServers entry running the test server over stdio
// with `tasks: auto` (and the given taskTimeout, when set).
func taskServer(tools, record, taskTimeout string) obj {
	srv := stdioServer(tools, record)
	srv["tasks"] = "auto"
	if taskTimeout != "" {
		srv["taskTimeout"] = taskTimeout
	}
	return srv
}

// TestTasksRun: a real server process answers a model's call with a task
// that asks for input twice; `run` follows it (tasks/get, the two
// questions answered as --approve auto answers asks, tasks/update), shows
// its states as tool_task events, and the model gets the task's result.
func TestTasksRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{{"name": "long_job", "inputSchema": obj{"type": "object"},
		"x-test": obj{"text": "job done", "task": obj{"inputs": 2, "polls": 1, "pollIntervalMs": 1}}}})
	script := modeltest.Script{rtCalls(rtCall("c1", "srv__long_job", obj{})), rtText("All done.")}

	t.Run("agenthost-stream-json", func(t *testing.T) {
		t.Parallel()
		record := filepath.Join(t.TempDir(), "record.jsonl")
		model := rtStartModel(t, script)
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": taskServer(tools, record, "")}})
		r := run(t, nil, "--config", cfg, "run", "run the job", "--output-format", "agenthost-stream-json", "--approve", "auto")
		wantCode(t, r, 0)
		events := rtEvents(t, r)
		var statuses []string
		for _, e := range rtOfType(events, "tool_task") {
			if e.CallID != "c1" || e.TaskID == "" || e.Server != "srv" || e.Tool != "long_job" {
				t.Errorf("tool_task event lacks its call or task: %s", e.raw)
			}
			if len(statuses) == 0 || statuses[len(statuses)-1] != e.TaskStatus {
				statuses = append(statuses, e.TaskStatus)
			}
		}
		want := []string{"working", "input_required", "working", "input_required", "working", "completed"}
		if fmt.Sprint(statuses) != fmt.Sprint(want) {
			t.Errorf("tool_task statuses %v, want %v\n%s", statuses, want, r)
		}
		results := rtOfType(events, "tool_result")
		if len(results) != 1 || results[0].IsError == nil || *results[0].IsError || !strings.Contains(results[0].text(), "answers: yes, yes") {
			t.Errorf("tool_result %+v, want the task's result with both answers\n%s", results, r)
		}
		recs := readRecord(t, record)
		if n := len(withMethod(recs, "tools/call")); n != 1 {
			t.Errorf("%d tools/call, want 1", n)
		}
		if n := len(withMethod(recs, "tasks/update")); n != 2 {
			t.Errorf("%d tasks/update, want 2 (one per question)", n)
		}
		for _, rec := range withMethod(recs, "tools/call") {
			if !strings.Contains(string(rec.Message), "io.modelcontextprotocol/tasks") {
				t.Errorf("tools/call without the Tasks extension declared: %s", rec.Message)
			}
		}
		model.wantNoFailures(t)
	})

	t.Run("text", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": taskServer(tools, "", "")}})
		r := run(t, nil, "--config", cfg, "run", "run the job", "--approve", "auto")
		wantCode(t, r, 0)
		for _, w := range []string{"[1] srv/long_job task task-", ": input_required (waiting for input 2 of 2)", ": completed (done)"} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("stderr lacks %q\n%s", w, r)
			}
		}
		model.wantNoFailures(t)
	})
}

// TestTasksCancelledAtTaskTimeout: a task that never ends is cancelled
// with tasks/cancel at taskTimeout, and the turn goes on with the call
// failed.
func TestTasksCancelledAtTaskTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{{"name": "long_job", "inputSchema": obj{"type": "object"},
		"x-test": obj{"task": obj{"forever": true, "pollIntervalMs": 1}}}})
	record := filepath.Join(dir, "record.jsonl")
	model := rtStartModel(t, modeltest.Script{rtCalls(rtCall("c1", "srv__long_job", obj{})), rtText("Gave up.")})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": taskServer(tools, record, "1s")}})
	r := run(t, nil, "--config", cfg, "run", "run the job", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 0)
	events := rtEvents(t, r)
	results := rtOfType(events, "tool_result")
	if len(results) != 1 || results[0].IsError == nil || !*results[0].IsError {
		t.Errorf("tool_result %+v, want one failed\n%s", results, r)
	}
	errs := rtOfType(events, "error")
	if len(errs) != 1 || !strings.Contains(errs[0].Error, "taskTimeout") {
		t.Errorf("error events %+v, want one naming taskTimeout\n%s", errs, r)
	}
	if n := len(withMethod(readRecord(t, record), "tasks/cancel")); n != 1 {
		t.Errorf("%d tasks/cancel, want 1\n%s", n, r)
	}
	model.wantNoFailures(t)
}
