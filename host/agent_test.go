package host

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/host/modeltest"
)

// agentHost is testHost plus a scripted model.
func agentHost(t *testing.T, script modeltest.Script) (*Host, *mcptest.Server, *modeltest.Server, *strings.Builder) {
	t.Helper()
	h, srv, logs := testHost(t, "", mcptest.Options{})
	return h, srv, scriptModel(t, h, script), logs
}

// scriptModel makes h's model the scripted one.
func scriptModel(t *testing.T, h *Host, script modeltest.Script) *modeltest.Server {
	t.Helper()
	scripted := modeltest.New(script)
	h.model = openaimodel.New(openaimodel.Options{BaseURL: scripted.Start(t), APIKey: "sk-test", MaxRetryWait: time.Second})
	h.modelName = "scripted"
	return scripted
}

func collect(t *testing.T, s *Session, ctx context.Context, prompt string, opts TurnOptions) []Event {
	t.Helper()
	var events []Event
	for e := range s.Turn(ctx, prompt, opts) {
		events = append(events, e)
	}
	if len(events) == 0 || events[len(events)-1].Type != EventSessionEnd {
		t.Fatalf("turn did not end with session_end: %+v", events)
	}
	return events
}

func ofType(events []Event, typ EventType) []Event {
	var out []Event
	for _, e := range events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func TestTurnMultiStepWithParallelCalls(t *testing.T) {
	script := modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{
			{Name: "db__echo", Arguments: `{"text":"one"}`},
			{Name: "db__execute_sql", Arguments: `{"query":"SELECT 2"}`},
		}},
		{Text: "All done."},
	}
	h, srv, model, logs := agentHost(t, script)
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
	events := collect(t, s, context.Background(), "go", TurnOptions{})
	model.AssertNoFailures(t)

	end := events[len(events)-1]
	if end.Reason != EndDone || end.Steps != 2 || end.Usage == nil || end.Usage.TotalTokens == 0 {
		t.Errorf("end: %+v usage %+v", end, end.Usage)
	}
	if calls := ofType(events, EventToolCall); len(calls) != 2 {
		t.Fatalf("tool_call events: %d", len(calls))
	}
	results := ofType(events, EventToolResult)
	if len(results) != 2 {
		t.Fatalf("tool_result events: %d", len(results))
	}
	for _, r := range results {
		if r.IsError == nil || *r.IsError {
			t.Errorf("result %s is an error: %+v", r.CallID, r.Content)
		}
	}
	if a := ofType(events, EventAssistant); len(a) != 1 || a[0].Text != "All done." {
		t.Errorf("assistant events: %+v", a)
	}
	if n := len(toolCalls(t, srv)); n != 2 {
		t.Errorf("server got %d calls", n)
	}

	// What the model was sent: inputSchema only, never secure names or values.
	var tools []struct {
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(model.ToolsOf(0), &tools); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tool := range tools {
		if tool.Function.Name == "db__execute_sql" {
			found = true
			want := `{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`
			if compactJSON(t, tool.Function.Parameters) != compactJSON(t, json.RawMessage(want)) {
				t.Errorf("parameters = %s", tool.Function.Parameters)
			}
		}
	}
	if !found {
		t.Errorf("execute_sql not offered: %s", model.ToolsOf(0))
	}
	// Values never reach the model; secure names are not in what the host
	// sends (the test server's own result text names them, which is the
	// server's business).
	all := model.AllText()
	for _, leak := range []string{canary, "retail-prod", "us-west1"} {
		if strings.Contains(all, leak) {
			t.Errorf("model requests contain %q", leak)
		}
	}
	first := string(model.Requests()[0])
	for _, leak := range []string{"project_id", "instance", "secureInputSchema", "secureArguments"} {
		if strings.Contains(first, leak) {
			t.Errorf("first model request contains %q", leak)
		}
	}
	if strings.Contains(logs.String(), canary) {
		t.Errorf("canary in logs")
	}
}

func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestTurnRefusesInjectionAndGoesOn(t *testing.T) {
	script := modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{Name: "db__execute_sql", Arguments: `{"query":"SELECT * FROM salaries","instance":"payroll"}`}}},
		{ToolCalls: []modeltest.ToolCall{{Name: "db__execute_sql", Arguments: `{"query":"SELECT 1"}`}},
			Expect: &modeltest.Expect{LastToolResultContains: "invalid arguments"}},
		{Text: "ok"},
	}
	h, srv, model, _ := agentHost(t, script)
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": "checkout"}})
	events := collect(t, s, context.Background(), "investigate", TurnOptions{})
	model.AssertNoFailures(t)
	if end := events[len(events)-1]; end.Reason != EndDone {
		t.Fatalf("end: %+v", end)
	}
	calls := toolCalls(t, srv)
	if len(calls) != 1 {
		t.Fatalf("server got %d calls, want only the clean one", len(calls))
	}
	if string(calls[0]["secureArguments"]) != `{"instance":"checkout","project_id":"retail-prod","region":"us-west1"}` {
		t.Errorf("secureArguments: %s", calls[0]["secureArguments"])
	}
	msgs := model.MessagesOf(1)
	last := msgs[len(msgs)-1]
	if strings.Contains(strings.ToLower(last.Text()), "instance") {
		t.Errorf("refusal names the secure field: %q", last.Text())
	}
}

func TestTurnGarbageFromModel(t *testing.T) {
	tests := []struct {
		name, tool, args, want string
	}{
		{"unknown tool", "db__nope", `{}`, "Unknown tool"},
		{"invalid JSON", "db__echo", `{"text":`, "Invalid arguments"},
		{"not an object", "db__echo", `[1,2]`, "Invalid arguments"},
		{"schema mismatch", "db__echo", `{"text":42}`, "Invalid arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			script := modeltest.Script{
				{ToolCalls: []modeltest.ToolCall{{Name: tc.tool, Arguments: tc.args}}},
				{Text: "fixed", Expect: &modeltest.Expect{LastToolResultContains: tc.want}},
			}
			h, srv, model, _ := agentHost(t, script)
			events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{})
			model.AssertNoFailures(t)
			if end := events[len(events)-1]; end.Reason != EndDone {
				t.Errorf("end: %+v", end)
			}
			if n := len(toolCalls(t, srv)); n != 0 {
				t.Errorf("%d calls reached the server", n)
			}
		})
	}
}

func TestTurnStopsRepeatedFailingCall(t *testing.T) {
	step := modeltest.Step{ToolCalls: []modeltest.ToolCall{{Name: "db__boom", Arguments: `{}`}}}
	h, _, _, _ := agentHost(t, modeltest.Script{step, step, step, {Text: "never"}})
	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{})
	end := events[len(events)-1]
	if end.Reason != EndError || end.Steps != 3 {
		t.Fatalf("end: %+v", end)
	}
	if errs := ofType(events, EventError); len(errs) == 0 || !strings.Contains(errs[len(errs)-1].Error, "repeated") {
		t.Errorf("errors: %+v", errs)
	}
}

func TestTurnMaxSteps(t *testing.T) {
	step := modeltest.Step{ToolCalls: []modeltest.ToolCall{{Name: "db__echo", Arguments: `{"text":"again"}`}}}
	h, _, _, _ := agentHost(t, modeltest.Script{step, step, step})
	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{MaxSteps: 2})
	if end := events[len(events)-1]; end.Reason != EndMaxSteps || end.Steps != 2 {
		t.Fatalf("end: %+v", end)
	}
}

func TestTurnModelRetries(t *testing.T) {
	t.Run("429 then success", func(t *testing.T) {
		h, _, model, _ := agentHost(t, modeltest.Script{{Status: 429, RetryAfter: "0"}, {Text: "hello"}})
		events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{})
		if end := events[len(events)-1]; end.Reason != EndDone {
			t.Fatalf("end: %+v", end)
		}
		if n := len(model.Requests()); n != 2 {
			t.Errorf("%d requests", n)
		}
	})
	t.Run("500 until the budget ends", func(t *testing.T) {
		var script modeltest.Script
		for range 10 {
			script = append(script, modeltest.Step{Status: 500, RetryAfter: "0"})
		}
		h, _, model, _ := agentHost(t, script)
		events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{})
		if end := events[len(events)-1]; end.Reason != EndError {
			t.Fatalf("end: %+v", end)
		}
		if n := len(model.Requests()); n != 5 {
			t.Errorf("%d requests, want 1 + 4 retries", n)
		}
	})
}

func TestTurnCancelledMidStream(t *testing.T) {
	h, _, _, _ := agentHost(t, modeltest.Script{{Text: "partial answer that never finishes", Hang: true}})
	ctx, cancel := context.WithCancel(context.Background())
	s := h.NewSession(SessionOptions{})
	var events []Event
	for e := range s.Turn(ctx, "x", TurnOptions{}) {
		events = append(events, e)
		if e.Type == EventAssistantDelta {
			cancel()
		}
	}
	cancel()
	if end := events[len(events)-1]; end.Type != EventSessionEnd || end.Reason != EndInterrupted {
		t.Fatalf("end: %+v", end)
	}
}

// echoModel calls the db's echo tool once, then answers; it decides from the
// conversation alone, so many sessions can share it.
type echoModel struct{}

func (echoModel) Generate(_ context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			if yield(&model.Response{Partial: true, Message: model.Message{Content: "done"}}, nil) {
				yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, Content: "done: " + last.Content}}, nil)
			}
			return
		}
		yield(&model.Response{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "c1", Name: "db__execute_sql", Arguments: `{"query":"SELECT 1"}`},
		}}}, nil)
	}
}

func TestManyConcurrentSessions(t *testing.T) {
	h, srv, _ := testHost(t, "", mcptest.Options{})
	h.model = echoModel{}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := h.NewSession(SessionOptions{ID: fmt.Sprintf("s%d", i), Subject: fmt.Sprintf("tenant-%d", i%7),
				Values: map[string]string{"instance": fmt.Sprintf("db-%d", i)}})
			defer s.Close()
			var end Event
			for e := range s.Turn(context.Background(), "go", TurnOptions{}) {
				if e.Type == EventToolResult && (e.IsError == nil || *e.IsError) {
					errs <- fmt.Errorf("session %d: tool error %+v", i, e.Content)
				}
				end = e
			}
			if end.Reason != EndDone {
				errs <- fmt.Errorf("session %d ended %q", i, end.Reason)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for _, c := range toolCalls(t, srv) {
		var secure map[string]any
		_ = json.Unmarshal(c["secureArguments"], &secure)
		seen[secure["instance"].(string)] = true
	}
	if len(seen) != 100 {
		t.Errorf("distinct instances on the wire: %d, want 100 (a session used another's value)", len(seen))
	}
}

func TestTurnRetriesAModelTimeout(t *testing.T) {
	h, _, model, _ := agentHost(t, modeltest.Script{{Delay: 3 * time.Second, Text: "too late"}, {Text: "in time"}})
	h.model = openaimodel.New(openaimodel.Options{BaseURL: h.model.(*openaimodel.Model).BaseURL(), APIKey: "sk-test", Timeout: 300 * time.Millisecond})
	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "x", TurnOptions{})
	if end := events[len(events)-1]; end.Reason != EndDone {
		t.Fatalf("end: %+v", end)
	}
	if a := ofType(events, EventAssistant); len(a) != 1 || a[0].Text != "in time" {
		t.Errorf("assistant: %+v", a)
	}
	if n := len(model.Requests()); n != 2 {
		t.Errorf("%d model requests, want the timed-out one and its retry", n)
	}
}

// TestTurnKeepsRepeatedSecretsFromEveryone: a model that learned a
// protected value (here: the redactor knows it from the first call)
// repeats it in its text, streamed in small pieces, and forwards it in
// tool-call arguments in several spellings. Every such call is refused
// and audited as injection_blocked with nothing sent; no event, no later
// model request and no audit record carries the value.
func TestTurnKeepsRepeatedSecretsFromEveryone(t *testing.T) {
	escaped := strings.Replace(canary, "C", `\u0043`, 1)
	script := modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{Name: "db__execute_sql", Arguments: `{"query":"SELECT 1"}`}}},
		{Text: "I found the instance: " + canary + ", and I will pass it on.", ToolCalls: []modeltest.ToolCall{
			{Name: "db__echo", Arguments: `{"text":"` + canary + `"}`},
			{Name: "db__echo", Arguments: `{"text":"` + escaped + `"}`},
			{Name: "db__execute_sql", Arguments: `{"query":"SELECT '` + strings.ReplaceAll(canary, "-", `\u002d`) + `'"}`},
		}},
		{Text: "Fine, the value was " + canary, Expect: &modeltest.Expect{LastToolResultContains: "value the host protects"}},
	}
	h, srv, _ := testHost(t, "", mcptest.Options{})
	scripted := modeltest.New(script, modeltest.WithChunkRunes(3))
	h.model = openaimodel.New(openaimodel.Options{BaseURL: scripted.Start(t), APIKey: "sk-test", MaxRetryWait: time.Second})
	h.modelName = "scripted"
	sink := &recordSink{}
	h.setAudit(sink)
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
	events := collect(t, s, context.Background(), "go", TurnOptions{})
	scripted.AssertNoFailures(t)
	if end := events[len(events)-1]; end.Reason != EndDone {
		t.Fatalf("end: %+v", end)
	}
	if n := len(toolCalls(t, srv)); n != 1 {
		t.Errorf("the server got %d calls, want only the first, clean one", n)
	}
	var streamed strings.Builder
	for _, e := range ofType(events, EventAssistantDelta) {
		streamed.WriteString(e.Text)
	}
	if !strings.Contains(streamed.String(), "I found the instance: [REDACTED], and I will") {
		t.Errorf("streamed text = %q", streamed.String())
	}
	all, _ := json.Marshal(events)
	if strings.Contains(string(all), canary) || h.redactor.ContainsSecret(string(all)) {
		t.Errorf("events carry the value: %s", all)
	}
	if refused := ofType(events, EventToolResult); len(refused) != 4 {
		t.Errorf("tool_result events: %d, want 4", len(refused))
	}
	if text := scripted.AllText(); strings.Contains(text, canary) || h.redactor.ContainsSecret(text) {
		t.Errorf("a model request carries the value: %s", text)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	blocked := 0
	for _, rec := range sink.records {
		b, _ := json.Marshal(rec)
		if h.redactor.ContainsSecret(string(b)) {
			t.Errorf("audit record carries the value: %s", b)
		}
		if rec.Outcome == rules.OutcomeInjectionBlocked && rec.Result == auditlog.ResultNotExecuted {
			blocked++
		}
	}
	if blocked != 3 {
		t.Errorf("%d calls audited as injection_blocked, want 3", blocked)
	}
}

// A call's approver is asked only once the consumer has handled the
// tool_call events of every call of the step (the CLI prints the tool-call
// lines before the prompt),
// and the call's approval_requested event, naming the request the approver
// gets, has been handled too; a turn cancelled at the question still
// delivers the call's approval and result events.
func TestCallEventsReachTheConsumerBeforeTheApprover(t *testing.T) {
	var handled sync.Map   // call id -> tool_call event handled
	var requested sync.Map // call id -> approval_requested event handled
	var cancelTurn context.CancelFunc
	approver := approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
		if e, ok := requested.Load(req.CallID); !ok {
			t.Errorf("approver asked about %s before its approval_requested event was handled", req.CallID)
		} else if e := e.(Event); e.ApprovalID != req.ID || e.Deadline != req.Deadline.UTC().Format(time.RFC3339Nano) ||
			e.RiskLevel != string(req.Risk.RiskLevel) || e.Approvers == nil || *e.Approvers != req.Approvers || e.Explanation != "" {
			t.Errorf("approval_requested %+v does not describe the request %+v", e, req)
		}
		step := []string{"c1", "c2"} // the calls of the step
		if req.CallID == "c3" {
			step = []string{"c3"}
		}
		for _, id := range step {
			if _, ok := handled.Load(id); !ok {
				t.Errorf("approver asked about %s before the tool_call event of %s was handled", req.CallID, id)
			}
		}
		if req.CallID == "c3" {
			cancelTurn() // Ctrl-C at the question
		}
		return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteDeny, TS: time.Now()}}}, nil
	})
	h, _ := policyHost(t, approver, &recordSink{})
	scripted := modeltest.New(modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{
			{ID: "c1", Name: "shop__delete_order", Arguments: `{"id":1}`},
			{ID: "c2", Name: "shop__delete_order", Arguments: `{"id":2}`},
		}},
		{ToolCalls: []modeltest.ToolCall{{ID: "c3", Name: "shop__delete_order", Arguments: `{"id":3}`}}},
	})
	h.model = openaimodel.New(openaimodel.Options{BaseURL: scripted.Start(t), APIKey: "sk-test", MaxRetryWait: time.Second})
	h.modelName = "scripted"
	s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 2})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cancelTurn = cancel
	var events []Event
	for e := range s.Turn(ctx, "delete orders", TurnOptions{}) {
		events = append(events, e)
		if e.Type == EventToolCall {
			time.Sleep(20 * time.Millisecond) // a slow terminal: the approver must wait for it
			handled.Store(e.CallID, true)
		}
		if e.Type == EventApprovalRequested {
			requested.Store(e.CallID, e)
		}
	}
	if end := events[len(events)-1]; end.Reason != EndInterrupted {
		t.Fatalf("turn ended %q, want interrupted", end.Reason)
	}
	for _, id := range []string{"c1", "c2", "c3"} {
		var types []EventType
		for _, e := range events {
			if e.CallID == id {
				types = append(types, e.Type)
			}
		}
		if want := []EventType{EventToolCall, EventApprovalRequested, EventApproval, EventToolResult}; !slices.Equal(types, want) {
			t.Errorf("%s: events %v, want %v", id, types, want)
		}
	}
}

// session_end says how much of the turn was spent in model requests: at
// least the model's own delay, at most the turn's wall time.
func TestTurnReportsModelTime(t *testing.T) {
	h, _, model, _ := agentHost(t, modeltest.Script{{Delay: 200 * time.Millisecond, Text: "slow answer"}})
	events := collect(t, h.NewSession(SessionOptions{}), context.Background(), "go", TurnOptions{})
	model.AssertNoFailures(t)
	end := events[len(events)-1]
	if end.APIDurationMs == nil || end.DurationMs == nil || *end.APIDurationMs < 200 || *end.APIDurationMs > *end.DurationMs {
		t.Errorf("session_end durationMs %v apiDurationMs %v, want the model's 200 ms within the turn's", ptrText(end.DurationMs), ptrText(end.APIDurationMs))
	}
}

func ptrText(p *int64) string {
	if p == nil {
		return "absent"
	}
	return strconv.FormatInt(*p, 10)
}

// An ask that nobody can answer (no approver) is still announced: an
// approval_requested event with no request id and the fix, between the
// call's tool_call and its approval.
func TestApprovalRequestedWhenNobodyCanAnswer(t *testing.T) {
	h, _ := policyHost(t, nil, &recordSink{})
	scripted := modeltest.New(modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "shop__delete_order", Arguments: `{"id":1}`}}},
		{Text: "could not"},
	})
	h.model = openaimodel.New(openaimodel.Options{BaseURL: scripted.Start(t), APIKey: "sk-test", MaxRetryWait: time.Second})
	h.modelName = "scripted"
	s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 2})
	var types []EventType
	var requested *Event
	for e := range s.Turn(context.Background(), "delete order 1", TurnOptions{}) {
		if e.CallID == "c1" {
			types = append(types, e.Type)
		}
		if e.Type == EventApprovalRequested {
			requested = &e
		}
	}
	if want := []EventType{EventToolCall, EventApprovalRequested, EventApproval, EventToolResult}; !slices.Equal(types, want) {
		t.Fatalf("events %v, want %v", types, want)
	}
	if requested.ApprovalID != "" || requested.Explanation == "" || requested.Deadline != "" {
		t.Errorf("approval_requested when nobody can answer: %+v, want no id or deadline and the fix", *requested)
	}
}
