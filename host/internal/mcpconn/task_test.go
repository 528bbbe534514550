package mcpconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/taskwire"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/secureparams"
)

// answering is an elicitation handler that answers with the given action,
// numbering its answers, and counts what it was asked.
type answering struct {
	action mcp.ElicitationResponseAction
	mu     sync.Mutex
	asked  []string
}

func (a *answering) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Params.Message)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: a.action, Content: map[string]any{"answer": fmt.Sprintf("a%d", len(a.asked))}}}, nil
}

func (a *answering) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.asked)
}

// taskTool is a tools JSON with one tool whose x-test task is behaviour.
func taskTool(behaviour string) []byte {
	return []byte(`[{"name": "long_job", "inputSchema": {"type": "object"}, "x-test": {"task": ` + behaviour + `}}]`)
}

// taskConn connects to srv in process (or at url over HTTP) with the
// given tasks setting.
func taskConn(t *testing.T, srv *mcptest.Server, url string, cfg config.Server, elicit *answering) *Conn {
	t.Helper()
	opts := Options{Config: &cfg}
	if elicit != nil {
		opts.Elicitation = elicit
	}
	if url == "" {
		opts.Transport = func() (transport.Interface, error) { return srv.InProcessTransport(), nil }
	} else {
		cfg.URL, cfg.Type = url, config.TransportHTTP
	}
	c := New(context.Background(), "srv", opts)
	t.Cleanup(c.Close)
	return c
}

// taskServer serves long_job with the task behaviour in process or (over
// "http") on a real HTTP server, whose URL it returns.
func taskServer(t *testing.T, over, behaviour string) (*mcptest.Server, string) {
	t.Helper()
	return toolsServer(t, over, mcptest.Options{ToolsJSON: taskTool(behaviour)})
}

// toolsServer serves opts in process or (over "http") on a real HTTP
// server, whose URL it returns.
func toolsServer(t *testing.T, over string, opts mcptest.Options) (*mcptest.Server, string) {
	t.Helper()
	if over == "http" {
		url, srv := mcptest.StartHTTP(t, opts)
		return srv, url
	}
	srv, err := mcptest.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv, ""
}

func callLongJob(ctx context.Context, c *Conn, updates *[]TaskUpdate) (*mcp.CallToolResult, error) {
	req := CallRequest{Tool: &secureparams.Tool{Name: "long_job"}, Arguments: json.RawMessage(`{}`)}
	if updates != nil {
		req.OnTask = func(u TaskUpdate) { *updates = append(*updates, u) }
	}
	result, _, err := c.Call(ctx, req)
	return result, err
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func statuses(updates []TaskUpdate) []string {
	var out []string
	for _, u := range updates {
		if len(out) == 0 || out[len(out)-1] != u.Status {
			out = append(out, u.Status)
		}
	}
	return out
}

// TestTaskFollowedToItsResult: a call answered with a task handle is
// polled to its end, each of the task's two input requests goes through
// the elicitation handler once and back with tasks/update, and the caller
// gets the task's result; over stdio-like in-process and real HTTP (where
// every task request must carry Mcp-Name, the task id).
func TestTaskFollowedToItsResult(t *testing.T) {
	for _, over := range []string{"in-process", "http"} {
		t.Run(over, func(t *testing.T) {
			srv, url := taskServer(t, over, `{"inputs": 2, "polls": 1, "pollIntervalMs": 1}`)
			elicit := &answering{action: mcp.ElicitationResponseActionAccept}
			c := taskConn(t, srv, url, config.Server{Tasks: config.TasksAuto}, elicit)
			var updates []TaskUpdate
			result, err := callLongJob(context.Background(), c, &updates)
			if err != nil {
				t.Fatal(err)
			}
			if result.IsError || !strings.Contains(resultText(result), "answers: a1, a2") {
				t.Fatalf("result = %q (isError %v), want the task's result with both answers", resultText(result), result.IsError)
			}
			if n := elicit.count(); n != 2 {
				t.Errorf("elicited %d times, want 2 (one per input request, however often it is polled)", n)
			}
			rec := srv.Recording()
			if n := len(rec.Messages("tasks/update")); n != 2 {
				t.Errorf("%d tasks/update, want 2", n)
			}
			if n := len(rec.Messages("tools/call")); n != 1 {
				t.Errorf("%d tools/call, want 1", n)
			}
			want := []string{"working", "input_required", "working", "input_required", "working", "completed"}
			if got := statuses(updates); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("task statuses reported: %v, want %v", got, want)
			}
			if updates[0].TaskID == "" || updates[0].StatusMessage != "started" {
				t.Errorf("first update = %+v, want the task id and the server's message", updates[0])
			}
		})
	}
}

// TestTaskInputAskedOnce: a server that still shows an answered request
// for a few polls (eventually consistent) is not asked, nor answered,
// twice for it.
func TestTaskInputAskedOnce(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: taskTool(`{"inputs": 2, "lag": 2, "pollIntervalMs": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	elicit := &answering{action: mcp.ElicitationResponseActionAccept}
	c := taskConn(t, srv, "", config.Server{Tasks: config.TasksAuto}, elicit)
	result, err := callLongJob(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(result), "answers: a1, a2") {
		t.Errorf("result %q, want both answers", resultText(result))
	}
	if n := elicit.count(); n != 2 {
		t.Errorf("elicited %d times, want 2", n)
	}
	if n := len(srv.Recording().Messages("tasks/update")); n != 2 {
		t.Errorf("%d tasks/update, want 2", n)
	}
}

// TestTaskEndings: the ways a task call ends other than with its result.
func TestTaskEndings(t *testing.T) {
	tests := []struct {
		name      string
		behaviour string
		cfg       config.Server
		elicit    mcp.ElicitationResponseAction
		ctx       time.Duration // cancel the caller's context after this
		failure   Failure
		code      int // the RPC code the error carries
		isError   bool
		cancelled bool // a tasks/cancel was sent
	}{
		{name: "declined input completes with isError", behaviour: `{"inputs": 1, "pollIntervalMs": 1}`,
			cfg: config.Server{Tasks: config.TasksAuto}, elicit: mcp.ElicitationResponseActionDecline, isError: true},
		// The task's error code is one Call would otherwise re-send a
		// call after: a task that ran is never run again.
		{name: "failed task is its error, not re-sent", behaviour: `{"failCode": -32601, "pollIntervalMs": 1}`,
			cfg: config.Server{Tasks: config.TasksAuto}, failure: FailServerError, code: -32601},
		{name: "caller cancels: tasks/cancel", behaviour: `{"forever": true, "pollIntervalMs": 1}`,
			cfg: config.Server{Tasks: config.TasksAuto}, ctx: 400 * time.Millisecond, failure: FailCancelled, cancelled: true},
		{name: "taskTimeout: tasks/cancel", behaviour: `{"forever": true, "pollIntervalMs": 1}`,
			cfg: config.Server{Tasks: config.TasksAuto, TaskTimeout: 400 * time.Millisecond}, failure: FailTimeout, cancelled: true},
		{name: "too many inputs: tasks/cancel", behaviour: fmt.Sprintf(`{"inputs": %d, "pollIntervalMs": 1}`, maxTaskInputs+1),
			cfg: config.Server{Tasks: config.TasksAuto}, elicit: mcp.ElicitationResponseActionAccept, failure: FailServerError, cancelled: true},
		{name: "tasks off: the extension is not declared", behaviour: `{}`,
			cfg: config.Server{Tasks: config.TasksOff}, failure: FailServerError, code: -32021},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: taskTool(tc.behaviour)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			var elicit *answering
			if tc.elicit != "" {
				elicit = &answering{action: tc.elicit}
			}
			c := taskConn(t, srv, "", tc.cfg, elicit)
			ctx := context.Background()
			if tc.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.ctx)
				defer cancel()
			}
			result, err := callLongJob(ctx, c, nil)
			rec := srv.Recording()
			if n := len(rec.Messages("tools/call")); n != 1 {
				t.Errorf("%d tools/call, want 1", n)
			}
			if got := len(rec.Messages("tasks/cancel")) > 0; got != tc.cancelled {
				t.Errorf("tasks/cancel sent: %v, want %v", got, tc.cancelled)
			}
			if tc.failure == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if result.IsError != tc.isError {
					t.Errorf("isError = %v, want %v: %s", result.IsError, tc.isError, resultText(result))
				}
				return
			}
			var cerr *CallError
			if !errors.As(err, &cerr) {
				t.Fatalf("err = %v, want a *CallError", err)
			}
			if cerr.Failure != tc.failure {
				t.Errorf("failure = %v, want %v (%v)", cerr.Failure, tc.failure, err)
			}
			if tc.code != 0 && (cerr.RPC == nil || cerr.RPC.Code != tc.code) {
				t.Errorf("RPC = %+v, want code %d", cerr.RPC, tc.code)
			}
			if tc.cfg.Tasks == config.TasksAuto && cerr.Task == "" {
				t.Errorf("the error names no task: %v", err)
			}
		})
	}
}

// TestTaskExtensionDeclaredOnlyWhenOn: the client capability goes with
// requests only for a server with `tasks: auto`.
func TestTaskExtensionDeclaredOnlyWhenOn(t *testing.T) {
	for _, mode := range []string{config.TasksOff, config.TasksAuto} {
		t.Run(mode, func(t *testing.T) {
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "a_tool", "inputSchema": {"type": "object"}}]`)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			c := taskConn(t, srv, "", config.Server{Tasks: mode}, nil)
			if err := c.Connect(context.Background()); err != nil {
				t.Fatal(err)
			}
			lists := srv.Recording().Messages("tools/list")
			if len(lists) == 0 {
				t.Fatal("no tools/list")
			}
			declared := strings.Contains(string(lists[0].Message), config.TasksExtension)
			if declared != (mode == config.TasksAuto) {
				t.Errorf("tasks extension declared: %v with tasks %s: %s", declared, mode, lists[0].Message)
			}
		})
	}
}

// breakingTransport fails its first tasks/get as a broken connection
// would, once armed.
type breakingTransport struct {
	transport.Interface
	armed *atomic.Bool
}

func (b *breakingTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodTasksGet) && b.armed.CompareAndSwap(true, false) {
		return nil, io.EOF
	}
	return b.Interface.SendRequest(ctx, req)
}

// TestTaskPolledAgainAfterReconnect: the connection breaks while a task
// is polled; the task lives on the server, so the connection is made
// again and the same task polled to its end, without calling again.
func TestTaskPolledAgainAfterReconnect(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: taskTool(`{"polls": 2, "pollIntervalMs": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	armed := &atomic.Bool{}
	armed.Store(true)
	var dials atomic.Int32
	cfg := config.Server{Tasks: config.TasksAuto}
	c := New(context.Background(), "srv", Options{Config: &cfg, Transport: func() (transport.Interface, error) {
		dials.Add(1)
		return &breakingTransport{Interface: srv.InProcessTransport(), armed: armed}, nil
	}})
	defer c.Close()
	result, err := callLongJob(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if result.IsError {
		t.Errorf("result %q is an error", resultText(result))
	}
	if armed.Load() {
		t.Fatal("the connection was never broken")
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d connections, want 2 (one made again)", n)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 1 {
		t.Errorf("%d tools/call, want 1", n)
	}
}

// TestTaskUpdatesBounded: a server that changes its task's message or
// status at every poll is reported a bounded number of times, and the
// task's end always.
func TestTaskUpdatesBounded(t *testing.T) {
	c := New(context.Background(), "srv", Options{Config: &config.Server{}})
	defer c.Close()
	f := &taskFollower{c: c, id: "t1"}
	var got []TaskUpdate
	f.req.OnTask = func(u TaskUpdate) { got = append(got, u) }
	for i := range 1000 {
		f.report(&taskwire.Task{TaskID: "t1", Status: mcp.TaskStatusWorking, StatusMessage: fmt.Sprint("step ", i)})
		status := mcp.TaskStatusInputRequired
		if i%2 == 0 {
			status = mcp.TaskStatusWorking
		}
		f.report(&taskwire.Task{TaskID: "t1", Status: status})
	}
	f.report(&taskwire.Task{TaskID: "t1", Status: mcp.TaskStatusCompleted})
	if len(got) != maxTaskUpdates {
		t.Errorf("%d updates reported, want %d", len(got), maxTaskUpdates)
	}
	if last := got[len(got)-1]; last.Status != "completed" {
		t.Errorf("last update %+v, want the task's end", last)
	}
	messages := 0
	for i := 1; i < len(got); i++ {
		if got[i].Status == got[i-1].Status {
			messages++
		}
	}
	if messages > maxTaskMessageUpdates {
		t.Errorf("%d message-only updates, want at most %d", messages, maxTaskMessageUpdates)
	}
}

// TestTaskDecisionGoesToDecide: a task that asks twice, once for a
// decision and once for input, has the decision answered by
// CallRequest.Decide (approved: accepted with the boolean true; denied:
// declined, which ends the task with isError) and the other by the
// elicitation handler; without Decide both are elicited.
func TestTaskDecisionGoesToDecide(t *testing.T) {
	tests := []struct {
		name      string
		decide    *bool
		elicited  int
		isError   bool
		wantInRes string
	}{
		{name: "approved", decide: ptr(true), elicited: 1, wantInRes: "answers: confirm=true, a1"},
		{name: "denied", decide: ptr(false), elicited: 0, isError: true, wantInRes: "input 1 decline"},
		{name: "no Decide: elicited", elicited: 2, wantInRes: "answers: confirm=<nil>, a2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: taskTool(`{"inputs": 2, "decide": [1], "pollIntervalMs": 1}`)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			elicit := &answering{action: mcp.ElicitationResponseActionAccept}
			c := taskConn(t, srv, "", config.Server{Tasks: config.TasksAuto}, elicit)
			var questions []TaskQuestion
			req := CallRequest{Tool: &secureparams.Tool{Name: "long_job"}, Arguments: json.RawMessage(`{}`)}
			if tc.decide != nil {
				req.Decide = func(_ context.Context, q TaskQuestion) (bool, error) {
					questions = append(questions, q)
					return *tc.decide, nil
				}
			}
			result, _, err := c.Call(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if result.IsError != tc.isError || !strings.Contains(resultText(result), tc.wantInRes) {
				t.Fatalf("result = %q (isError %v), want %q (isError %v)", resultText(result), result.IsError, tc.wantInRes, tc.isError)
			}
			if n := elicit.count(); n != tc.elicited {
				t.Errorf("elicited %d times, want %d", n, tc.elicited)
			}
			if tc.decide != nil {
				if len(questions) != 1 || questions[0].Key != "input-1" || questions[0].TaskID == "" ||
					!strings.Contains(questions[0].Message, "Confirm step 1 of 2 of long_job") {
					t.Errorf("questions = %+v, want the one decision with its task, key and message", questions)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func taskListens(rec *mcptest.Recording) int {
	n := 0
	for _, m := range rec.Messages("subscriptions/listen") {
		if m.Dir == mcptest.DirIn && strings.Contains(string(m.Message), `"taskIds"`) {
			n++
		}
	}
	return n
}

// TestTaskFollowedThroughListen: a server that offers subscriptions/listen
// for its task (it acknowledges the task's id and sends notifications/tasks)
// has the task followed on that stream, its question answered, and the
// result taken from the notification, without polling tasks/get at the
// poll interval (which here would outlast taskTimeout): one tasks/get at
// most, to catch up once the stream is established.
func TestTaskFollowedThroughListen(t *testing.T) {
	for _, over := range []string{"in-process", "http"} {
		t.Run(over, func(t *testing.T) {
			srv, url := taskServer(t, over, `{"inputs": 1, "polls": 2, "pollIntervalMs": 60000, "notify": true}`)
			elicit := &answering{action: mcp.ElicitationResponseActionAccept}
			c := taskConn(t, srv, url, config.Server{Tasks: config.TasksAuto, TaskTimeout: 10 * time.Second}, elicit)
			var updates []TaskUpdate
			result, err := callLongJob(context.Background(), c, &updates)
			if err != nil {
				t.Fatal(err)
			}
			if result.IsError || !strings.Contains(resultText(result), "answers: a1") {
				t.Fatalf("result = %q (isError %v), want the task's result with the answer", resultText(result), result.IsError)
			}
			rec := srv.Recording()
			var gets int
			for _, m := range rec.Messages("tasks/get") {
				if m.Dir == mcptest.DirIn {
					gets++
				}
			}
			if gets > 1 {
				t.Errorf("%d tasks/get, want at most 1 (the task is followed on its stream)", gets)
			}
			if n := taskListens(rec); n != 1 {
				t.Errorf("%d subscriptions/listen naming the task, want 1", n)
			}
			if got := statuses(updates); got[len(got)-1] != "completed" || !slices.Contains(got, "input_required") {
				t.Errorf("task statuses reported: %v", got)
			}
		})
	}
}

// TestTaskPolledAtItsInterval: a server that does not offer the task on
// subscriptions/listen (it acknowledges none) has the task polled with
// tasks/get, each poll at least the server's pollIntervalMs after the last.
func TestTaskPolledAtItsInterval(t *testing.T) {
	const interval = 150 * time.Millisecond
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: taskTool(fmt.Sprintf(`{"polls": 2, "pollIntervalMs": %d}`, interval.Milliseconds()))})
	c := taskConn(t, srv, url, config.Server{Tasks: config.TasksAuto}, nil)
	start := time.Now()
	result, err := callLongJob(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if result.IsError {
		t.Fatalf("result %q is an error", resultText(result))
	}
	rec := srv.Recording()
	var at []time.Time
	for _, m := range rec.Messages("tasks/get") {
		if m.Dir == mcptest.DirIn {
			at = append(at, m.Time)
		}
	}
	if len(at) != 3 {
		t.Fatalf("%d tasks/get, want 3 (two working steps and the end)", len(at))
	}
	for i, ts := range at {
		prev := start
		if i > 0 {
			prev = at[i-1]
		}
		if gap := ts.Sub(prev); gap < interval {
			t.Errorf("tasks/get %d came %v after the one before, sooner than the interval %v", i+1, gap, interval)
		}
	}
	if n := taskListens(rec); n != 1 {
		t.Errorf("%d subscriptions/listen naming the task, want 1 (tried, refused)", n)
	}
}

// TestLegacyTaskForm: on a 2025-11-25 connection, a tool whose
// execution.taskSupport is optional, of a server that declares
// tasks.requests.tools.call, is called task-augmented (params.task); the
// {task} answer is polled with tasks/get at its pollInterval and the
// result taken with tasks/result once it ended. A tool without
// taskSupport is called as usual, and with `tasks: off` nothing is
// augmented.
func TestLegacyTaskForm(t *testing.T) {
	tools := []byte(`[{"name": "long_job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
		"x-test": {"text": "job done", "task": {"polls": 2, "pollIntervalMs": 1}}},
		{"name": "failing_job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"},
		"x-test": {"task": {"polls": 1, "pollIntervalMs": 1, "failCode": -32050}}}]`)
	for _, over := range []string{"in-process", "http"} {
		t.Run(over, func(t *testing.T) {
			srv, url := toolsServer(t, over, mcptest.Options{ToolsJSON: tools})
			c := taskConn(t, srv, url, config.Server{Tasks: config.TasksAuto, ProtocolVersion: "2025-11-25"}, nil)
			var updates []TaskUpdate
			req := CallRequest{Tool: &secureparams.Tool{Name: "long_job", Raw: json.RawMessage(`{"name":"long_job","execution":{"taskSupport":"optional"}}`)},
				Arguments: json.RawMessage(`{}`), OnTask: func(u TaskUpdate) { updates = append(updates, u) }}
			result, _, err := c.Call(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if result.IsError || !strings.Contains(resultText(result), "job done") {
				t.Fatalf("result = %q (isError %v), want the task's result", resultText(result), result.IsError)
			}
			rec := srv.Recording()
			calls := rec.Messages("tools/call")
			if len(calls) == 0 || !strings.Contains(string(calls[0].Message), `"task":{}`) {
				t.Errorf("the tools/call was not task-augmented: %d calls", len(calls))
			}
			in := func(method string) (n int) {
				for _, m := range rec.Messages(method) {
					if m.Dir == mcptest.DirIn {
						n++
					}
				}
				return n
			}
			if in("tasks/get") != 3 || in("tasks/result") != 1 {
				t.Errorf("%d tasks/get and %d tasks/result, want 3 and 1", in("tasks/get"), in("tasks/result"))
			}
			if got := statuses(updates); len(got) == 0 || got[len(got)-1] != "completed" || updates[0].TaskID == "" {
				t.Errorf("updates %+v", updates)
			}

			failing := CallRequest{Tool: &secureparams.Tool{Name: "failing_job", Raw: json.RawMessage(`{"execution":{"taskSupport":"required"}}`)}, Arguments: json.RawMessage(`{}`)}
			_, _, err = c.Call(context.Background(), failing)
			var cerr *CallError
			if !errors.As(err, &cerr) || cerr.Task == "" || !strings.Contains(err.Error(), "-32050") && !strings.Contains(err.Error(), "failed on purpose") && !strings.Contains(err.Error(), "task failed") {
				t.Errorf("failing task: %v, want a call error naming the task and its error", err)
			}
		})
	}
}

// TestLegacyTaskQuestions: a 2025-11-25 task that needs input asks with
// elicitation/create while tasks/result is pending; the connection's
// elicitation handler answers each question (two here), and the call's
// result carries the answers. A declined question ends the task with the
// server's isError result; without a handler the question is refused and
// the call fails naming the task.
func TestLegacyTaskQuestions(t *testing.T) {
	tools := []byte(`[{"name": "asking_job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
		"x-test": {"text": "job done", "task": {"inputs": 2, "polls": 1, "pollIntervalMs": 1}}}]`)
	req := CallRequest{Tool: &secureparams.Tool{Name: "asking_job", Raw: json.RawMessage(`{"name":"asking_job","execution":{"taskSupport":"optional"}}`)},
		Arguments: json.RawMessage(`{}`)}
	cases := []struct {
		name    string
		action  mcp.ElicitationResponseAction // "": no handler
		asked   int                           // questions the handler saw
		text    string                        // in the result
		isError bool
		fails   bool // the call fails with a CallError naming the task
	}{
		{name: "accepted", action: mcp.ElicitationResponseActionAccept, asked: 2, text: "answers: a1, a2"},
		{name: "declined", action: mcp.ElicitationResponseActionDecline, asked: 1, text: "input 1 decline", isError: true},
		{name: "no handler", fails: true},
	}
	for _, over := range []string{"in-process", "http"} {
		for _, tc := range cases {
			t.Run(over+"/"+tc.name, func(t *testing.T) {
				srv, url := toolsServer(t, over, mcptest.Options{ToolsJSON: tools})
				var elicit *answering
				if tc.action != "" {
					elicit = &answering{action: tc.action}
				}
				c := taskConn(t, srv, url, config.Server{Tasks: config.TasksAuto, ProtocolVersion: "2025-11-25"}, elicit)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				result, _, err := c.Call(ctx, req)
				if tc.fails {
					var cerr *CallError
					if !errors.As(err, &cerr) || cerr.Task == "" || !strings.Contains(err.Error(), "not answered") {
						t.Fatalf("call = %v, %v; want a call error naming the task and the unanswered input", result, err)
					}
				} else {
					if err != nil {
						t.Fatal(err)
					}
					if got := resultText(result); result.IsError != tc.isError || !strings.Contains(got, tc.text) {
						t.Errorf("result = %q (isError %v), want %q (isError %v)", got, result.IsError, tc.text, tc.isError)
					}
					if got := elicit.count(); got != tc.asked {
						t.Errorf("the handler was asked %d times, want %d", got, tc.asked)
					}
				}
				asks := 0
				for _, m := range srv.Recording().Sent("elicitation/create") {
					asks++
					if !strings.Contains(string(m.Message), `"io.modelcontextprotocol/related-task":{"taskId":"task-`) {
						t.Errorf("the question does not name its task: %s", m.Message)
					}
				}
				if want := max(tc.asked, 1); asks != want {
					t.Errorf("the server asked %d times, want %d", asks, want)
				}
			})
		}
	}
}
