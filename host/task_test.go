package host

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/modeltest"
)

// taskHost is a host with one server, db, reached over HTTP with `tasks:
// auto`, serving tools, whose elicitations answer "answer N"; asked
// counts them.
func taskHost(t *testing.T, tools string, redactor *bindings.Redactor, asked *atomic.Int32) (*Host, *mcptest.Server) {
	return taskHostWith(t, config.TasksAuto, tools, redactor, asked)
}

func taskHostWith(t *testing.T, tasks, tools string, redactor *bindings.Redactor, asked *atomic.Int32) (*Host, *mcptest.Server) {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(tools)})
	cfg := &config.Config{MCPServers: map[string]*config.Server{
		"db": {URL: url, Type: config.TransportHTTP, CallTimeout: 5 * time.Second, Tasks: tasks, TaskTimeout: 3 * time.Second},
	}}
	cfg.Approvals = readsAllowed()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	elicit := func(_ context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		n := asked.Add(1)
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": fmt.Sprintf("answer %d", n)}}}, nil
	}
	h, err := New(Options{Config: cfg, Elicitation: elicit, Redactor: redactor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, srv
}

// TestTurnFollowsATask: a model's call that the server answers with a
// task reaches the turn's events as tool_task events (creation, both
// input requests, completion), the task's two questions go through the
// host's elicitation, the model gets the task's result, and the server's
// status message is masked like everything else the host emits.
func TestTurnFollowsATask(t *testing.T) {
	const canary = "CANARY-task-5e1d0c"
	tools := `[{"name": "long_job", "inputSchema": {"type": "object"},
		"x-test": {"text": "job done", "task": {"inputs": 2, "polls": 1, "pollIntervalMs": 1, "message": "working on ` + canary + `"}}}]`
	redactor := bindings.NewRedactor()
	redactor.Add(canary)
	var asked atomic.Int32
	h, srv := taskHost(t, tools, redactor, &asked)
	script := modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{Name: "db__long_job", Arguments: `{}`}}},
		{Text: "ok", Expect: &modeltest.Expect{LastToolResultContains: "answers: answer 1, answer 2"}},
	}
	scripted := scriptModel(t, h, script)

	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "run the job", TurnOptions{})
	scripted.AssertNoFailures(t)
	if end := events[len(events)-1]; end.Reason != EndDone {
		t.Fatalf("end: %+v", end)
	}
	if n := asked.Load(); n != 2 {
		t.Errorf("elicited %d times, want 2", n)
	}
	tasks := ofType(events, EventToolTask)
	var got []string
	for _, e := range tasks {
		if e.TaskID == "" || e.CallID == "" || e.Server != "db" || e.Tool != "long_job" {
			t.Errorf("tool_task event lacks its call or task: %+v", e)
		}
		if strings.Contains(e.StatusMessage, canary) {
			t.Errorf("tool_task event carries a protected value: %+v", e)
		}
		if len(got) == 0 || got[len(got)-1] != e.TaskStatus {
			got = append(got, e.TaskStatus)
		}
	}
	want := []string{"working", "input_required", "working", "input_required", "working", "completed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("tool_task statuses %v, want %v", got, want)
	}
	// The task's events come between the call and its result.
	var order []EventType
	for _, e := range events {
		switch e.Type {
		case EventToolCall, EventToolResult:
			order = append(order, e.Type)
		case EventToolTask:
			if len(order) == 0 || order[len(order)-1] != EventToolTask {
				order = append(order, e.Type)
			}
		}
	}
	if fmt.Sprint(order) != fmt.Sprint([]EventType{EventToolCall, EventToolTask, EventToolResult}) {
		t.Errorf("event order %v", order)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 1 {
		t.Errorf("%d tools/call, want 1", n)
	}
}

// TestTurnTaskTimeout: a task that never ends is cancelled at taskTimeout
// and the model is told the call failed.
func TestTurnTaskTimeout(t *testing.T) {
	tools := `[{"name": "long_job", "inputSchema": {"type": "object"}, "x-test": {"task": {"forever": true, "pollIntervalMs": 1}}}]`
	var asked atomic.Int32
	h, srv := taskHost(t, tools, nil, &asked)
	script := modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{Name: "db__long_job", Arguments: `{}`}}},
		{Text: "gave up"},
	}
	scripted := scriptModel(t, h, script)
	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "run the job", TurnOptions{})
	scripted.AssertNoFailures(t)
	results := ofType(events, EventToolResult)
	if len(results) != 1 || !results[0].Failed() {
		t.Fatalf("tool results %+v, want one failed", results)
	}
	errs := ofType(events, EventError)
	if len(errs) != 1 || errs[0].Kind != KindUnavailable || !strings.Contains(errs[0].Error, "taskTimeout") {
		t.Errorf("error events %+v, want one timeout naming taskTimeout", errs)
	}
	if n := len(srv.Recording().Messages("tasks/cancel")); n != 1 {
		t.Errorf("%d tasks/cancel, want 1", n)
	}
}

// TestTaskToolWithTasksOff: a server that only runs the tool as a task
// answers -32021 naming the extension; the operator is told the key to set.
func TestTaskToolWithTasksOff(t *testing.T) {
	tools := `[{"name": "long_job", "inputSchema": {"type": "object"}, "x-test": {"task": {}}}]`
	var asked atomic.Int32
	h, _ := taskHostWith(t, config.TasksOff, tools, nil, &asked)
	_, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "long_job", []byte(`{}`))
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "mcpServers.db.tasks: auto") {
		t.Fatalf("err = %v (kind %s), want a config error naming mcpServers.db.tasks", err, KindOf(err))
	}
}

// TestLegacyTaskQuestions: on a 2025-11-25 connection a task's questions
// come as elicitation/create requests during tasks/result; the host's
// Elicitation answers them and the model gets the task's result with the
// answers. Without Elicitation the host declines, and the model gets the
// server's result for a declined input. In process and over HTTP.
func TestLegacyTaskQuestions(t *testing.T) {
	tools := []byte(`[{"name": "long_job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
		"x-test": {"text": "job done", "task": {"inputs": 2, "polls": 1, "pollIntervalMs": 1}}}]`)
	for _, over := range []string{"in-process", "http"} {
		for _, answered := range []bool{true, false} {
			t.Run(over+map[bool]string{true: "/answered", false: "/declined"}[answered], func(t *testing.T) {
				server := &config.Server{Tasks: config.TasksAuto, ProtocolVersion: "2025-11-25", CallTimeout: 5 * time.Second, TaskTimeout: 5 * time.Second}
				opts := Options{}
				var srv *mcptest.Server
				if over == "http" {
					server.URL, srv = mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: tools})
					server.Type = config.TransportHTTP
				} else {
					var err error
					if srv, err = mcptest.New(mcptest.Options{ToolsJSON: tools}); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = srv.Close() })
					opts.Transports = map[string]TransportFactory{"db": func() (transport.Interface, error) { return srv.InProcessTransport(), nil }}
				}
				opts.Config = &config.Config{MCPServers: map[string]*config.Server{"db": server}, Approvals: readsAllowed()}
				opts.Config.ApplyDefaults()
				var asked atomic.Int32
				want := "input 1 decline"
				if answered {
					want = "answers: answer 1, answer 2"
					opts.Elicitation = func(_ context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
						n := asked.Add(1)
						return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
							Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": fmt.Sprintf("answer %d", n)}}}, nil
					}
				}
				h, err := New(opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = h.Close() })
				scripted := scriptModel(t, h, modeltest.Script{
					{ToolCalls: []modeltest.ToolCall{{Name: "db__long_job", Arguments: `{}`}}},
					{Text: "ok", Expect: &modeltest.Expect{LastToolResultContains: want}},
				})
				events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "run the job", TurnOptions{})
				scripted.AssertNoFailures(t)
				if end := events[len(events)-1]; end.Reason != EndDone {
					t.Fatalf("end: %+v", end)
				}
				if n, want := asked.Load(), map[bool]int32{true: 2, false: 0}[answered]; n != want {
					t.Errorf("elicited %d times, want %d", n, want)
				}
				if n := len(srv.Recording().Messages("tasks/result")); n != 1 {
					t.Errorf("%d tasks/result, want 1 (the 2025-11-25 form)", n)
				}
			})
		}
	}
}
