package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/host/modeltest"
)

// rtQueryInput is the inputSchema of the test tools that take one query.
var rtQueryInput = obj{"type": "object", "properties": obj{"query": obj{"type": "string"}}}

// rtJSONEqual compares two JSON documents by value.
func rtJSONEqual(t *testing.T, what string, want, got json.RawMessage) {
	t.Helper()
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("%s: want is not JSON: %v: %s", what, err, want)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: got is not JSON: %v: %s", what, err, got)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

// rtPayloadTool is one entry of a chat request's tools array.
type rtPayloadTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// rtToolMessages maps tool_call_id to the text of the tool messages of a
// model request.
func rtToolMessages(msgs []modeltest.Message) map[string]string {
	out := map[string]string{}
	for _, m := range msgs {
		if m.Role == "tool" {
			out[m.ToolCallID] = m.Text()
		}
	}
	return out
}

// TestRtStreamJSONAcrossServers drives a three-step session over the
// secure-params test server and server-everything: parallel secure calls
// (one needing a confirmation round, one failing and echoing a secure
// value), a rate-limited model request, server-everything's echo next to a
// retry of the failing call and a call the server answers with a JSON-RPC
// error quoting a secure value, then text. It checks the event stream, the
// transcript the model gets, the tools payload against `tools --json`, the
// secure values at the server, and that no secure name or value ever
// reaches the model.
func TestRtStreamJSONAcrossServers(t *testing.T) {
	t.Parallel()
	tenantName, projectName := rtName(t, "tenant_key"), rtName(t, "project_ref")
	tenantValue, projectValue := newCanary(t, "tenant"), newCanary(t, "project")
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "lookup", "description": "Look an account up.", "inputSchema": rtQueryInput,
			"secureInputSchema": secureSchema([]string{tenantName, projectName}, tenantName, projectName),
			"x-test":            obj{"text": "lookup ok", "inputRequired": 1}},
		// A careless server that puts a secure value into its error text.
		{"name": "flaky", "description": "Sometimes fails.", "inputSchema": rtQueryInput,
			"secureInputSchema": secureSchema([]string{tenantName}, tenantName),
			"x-test":            obj{"isError": true, "text": "flaky failed for tenant " + tenantValue}},
		// ... or into a JSON-RPC error message.
		{"name": "broken", "description": "Always breaks.", "inputSchema": rtQueryInput,
			"secureInputSchema": secureSchema([]string{tenantName}, tenantName),
			"x-test":            obj{"errorCode": -32603, "errorMessage": "database of tenant " + tenantValue + " is down"}},
	})
	record := filepath.Join(dir, "record.jsonl")
	echoText := rtName(t, "hello")
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "vault__lookup", obj{"query": "q1"}), rtCall("c2", "vault__flaky", obj{"query": "q2"})),
		{Status: 429, RetryAfter: "0"},
		rtCalls(rtCall("c3", "everything__echo", obj{"message": echoText}), rtCall("c4", "vault__flaky", obj{"query": "q2"}),
			rtCall("c5", "vault__broken", obj{"query": "q3"})),
		rtText("All done."),
	})
	node, script := everythingServer(t)
	cfg := writeConfig(t, obj{
		"llm": model.llm(),
		"mcpServers": obj{
			"vault":      stdioServer(tools, record),
			"everything": obj{"command": node, "args": []string{script}},
		},
		"bindings": []obj{{"server": "vault", "params": obj{
			tenantName:  obj{"value": tenantValue},
			projectName: obj{"session": "project"},
		}}},
	})
	bind := "project=" + projectValue

	// What the model should be sent, per `tools --json` of the same config.
	tr := run(t, nil, "--config", cfg, "tools", "--json", "--bind", bind)
	wantCode(t, tr, 0)
	active := map[string]json.RawMessage{}
	for _, s := range decodeStdout[toolsDoc](t, tr).Servers {
		for _, tl := range s.Tools {
			if tl.Status == "active" && tl.ExposedName != nil {
				active[*tl.ExposedName] = tl.InputSchema
			}
		}
	}
	for _, name := range []string{"vault__lookup", "vault__flaky", "vault__broken", "everything__echo"} {
		if active[name] == nil {
			t.Fatalf("tools --json lists no active tool exposed as %s (the script calls it): %v", name, sortedKeys(active))
		}
	}

	r := run(t, nil, "--config", cfg, "run", "look it up", "--output-format", "agenthost-stream-json", "--bind", bind, "--approve", "auto")
	wantCode(t, r, 0)
	wantNoCanary(t, r, tenantValue, projectValue)
	events := rtEvents(t, r)
	end := rtEnd(t, events, "done", 3)
	if end.Usage != nil && (end.Usage.TotalTokens <= 0 || end.Usage.PromptTokens <= 0) {
		t.Errorf("session_end usage %+v, want positive token counts", *end.Usage)
	}

	wantArgs := map[string]string{"c1": `{"query":"q1"}`, "c2": `{"query":"q2"}`, "c3": mustJSON(obj{"message": echoText}),
		"c4": `{"query":"q2"}`, "c5": `{"query":"q3"}`}
	for _, c := range []struct {
		id, server, tool string
		step             int
		isError          bool
		text             string
	}{
		{"c1", "vault", "lookup", 1, false, "lookup ok"},
		{"c2", "vault", "flaky", 1, true, "flaky failed"},
		{"c3", "everything", "echo", 2, false, echoText},
		{"c4", "vault", "flaky", 2, true, "flaky failed"},
		{"c5", "vault", "broken", 2, true, ""},
	} {
		res := rtWantCall(t, events, c.id, c.server, c.tool, "auto_allowed", c.isError)
		if res.Step != c.step {
			t.Errorf("call %s ran at step %d, want %d", c.id, res.Step, c.step)
		}
		if !strings.Contains(res.text(), c.text) {
			t.Errorf("call %s: tool_result %q lacks %q", c.id, res.text(), c.text)
		}
		rtJSONEqual(t, "tool_call arguments of "+c.id, json.RawMessage(wantArgs[c.id]), rtOfCall(events, c.id)[0].Arguments)
	}
	if errs := rtOfType(events, "error"); len(errs) > 0 {
		t.Errorf("unexpected error events: %s", errs[0].raw)
	}
	assistant := rtOfType(events, "assistant")
	if len(assistant) != 1 || assistant[0].Text != "All done." || assistant[0].Step != 3 {
		t.Errorf("assistant events %+v, want one at step 3 saying \"All done.\"", assistant)
	}
	// Events come step by step: nothing of a step before the previous one
	// ended, and the assistant text right before session_end.
	lastStep := 0
	for _, e := range events[1 : len(events)-1] {
		if e.Step < lastStep {
			t.Errorf("event %s of step %d after an event of step %d", e.Type, e.Step, lastStep)
		}
		lastStep = e.Step
	}
	if events[len(events)-2].Type != "assistant" {
		t.Errorf("the event before session_end is %s, want assistant", events[len(events)-2].Type)
	}

	// The model side: every request well formed, the 429 retried with the
	// same body, every tool message answering its own call.
	rec := model.wantNoFailures(t)
	if len(rec) != 4 {
		t.Fatalf("model got %d requests, want 4 (step 1, the 429, its retry, step 3)", len(rec))
	}
	if !bytes.Equal(rec[1].Body, rec[2].Body) {
		t.Errorf("the request retried after 429 differs from the rate-limited one")
	}
	answers := rtToolMessages(rec.MessagesOf(3))
	for id, want := range map[string]string{"c1": "lookup ok", "c2": "flaky failed", "c3": echoText, "c4": "flaky failed", "c5": ""} {
		if got, ok := answers[id]; !ok || !strings.Contains(got, want) {
			t.Errorf("the tool message answering %s is %q (present %t), want it to contain %q", id, got, ok, want)
		}
	}

	// The tools payload is exactly the active tools with their inputSchema.
	var payload []rtPayloadTool
	if err := json.Unmarshal(rec.ToolsOf(0), &payload); err != nil {
		t.Fatalf("tools payload: %v: %s", err, rec.ToolsOf(0))
	}
	var sent []string
	for _, p := range payload {
		sent = append(sent, p.Function.Name)
		if p.Type != "function" {
			t.Errorf("tool %s has type %q, want function", p.Function.Name, p.Type)
		}
		want, ok := active[p.Function.Name]
		if !ok {
			t.Errorf("the model was offered %s, which tools --json does not list as active", p.Function.Name)
			continue
		}
		rtJSONEqual(t, "parameters of "+p.Function.Name+" vs tools --json inputSchema", want, p.Function.Parameters)
	}
	if slices.Sort(sent); !slices.Equal(sent, sortedKeys(active)) {
		t.Errorf("tools payload names %v, want the active tools %v", sent, sortedKeys(active))
	}

	// Nothing secure reached the model, in any request: not the names, not
	// the bound values, not the value the servers echoed in a result or an
	// error.
	rtWantNoText(t, "the model requests", rec.AllText(), tenantName, projectName, tenantValue, projectValue)

	// The control: the values did reach the server, on every round.
	recs := readRecord(t, record)
	lookups, others := rtToolCallsOf(t, recs, "lookup"), append(rtToolCallsOf(t, recs, "flaky"), rtToolCallsOf(t, recs, "broken")...)
	if len(lookups) != 2 || len(others) != 3 {
		t.Fatalf("server got %d lookup and %d flaky or broken calls, want 2 (lookup's retry after its input round) and 3", len(lookups), len(others))
	}
	for i, c := range append(lookups, others...) {
		got, _ := secureArgumentsOf(t, c)
		want := map[string]any{tenantName: tenantValue}
		if i < 2 {
			want[projectName] = projectValue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("tools/call %d secureArguments (-want +got):\n%s", i, diff)
		}
	}

	// A decision and a result record per call, secure parameter names only.
	auditPath := rtAuditPath(cfg)
	byCall := rtAuditByCall(t, rtReadAudit(t, auditPath))
	if len(byCall) != 5 {
		t.Errorf("audit records of %d calls, want 5", len(byCall))
	}
	wantSecure := map[string][]string{"c1": {tenantName, projectName}, "c2": {tenantName}, "c3": {}, "c4": {tenantName}, "c5": {tenantName}}
	for id, result := range map[string]string{"c1": "ok", "c2": "tool_error", "c3": "ok", "c4": "tool_error", "c5": "server_error"} {
		tool := map[string]string{"c1": "lookup", "c2": "flaky", "c3": "echo", "c4": "flaky", "c5": "broken"}[id]
		a := rtWantAudit(t, byCall, id, tool, "allow", "auto_allowed", result)
		got := slices.Clone(a.SecureParams)
		want := slices.Clone(wantSecure[id])
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("audit %s secureParams %v, want %v", id, got, want)
		}
	}
	auditText, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	rtWantNoText(t, "the audit file", string(auditText), tenantValue, projectValue)
}

// TestRtInjectionTurn: the model names a secure parameter in its
// arguments. The call is refused before anything reaches the server, the
// model is told without naming any secure field, the turn goes on, and
// the audit says injection_blocked.
func TestRtInjectionTurn(t *testing.T) {
	t.Parallel()
	tenantName, regionName := rtName(t, "tenant_key"), rtName(t, "region")
	tenantValue := newCanary(t, "tenant")
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "lookup", "inputSchema": rtQueryInput,
			"secureInputSchema": secureSchema([]string{tenantName}, tenantName, regionName),
			"x-test":            obj{"text": "lookup ok"}},
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status ok"}},
	})
	record := filepath.Join(dir, "record.jsonl")
	injected := obj{"query": "q", tenantName: "attacker-tenant"}
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "srv__lookup", injected)),
		rtCalls(rtCall("c2", "srv__status", obj{})),
		rtText("Finished."),
	})
	cfg := writeConfig(t, obj{
		"llm":        model.llm(),
		"mcpServers": obj{"srv": stdioServer(tools, record)},
		"bindings": []obj{{"server": "srv", "params": obj{
			tenantName: obj{"value": tenantValue}, regionName: obj{"value": "eu-west-1"},
		}}},
	})

	r := run(t, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 0)
	wantNoCanary(t, r, tenantValue)
	events := rtEvents(t, r)
	rtEnd(t, events, "done", 3)
	// Refused before the approval workflow: no approval event.
	rtWantCall(t, events, "c1", "srv", "lookup", "", true)
	for _, e := range rtOfCall(events, "c1")[1:] {
		rtWantNoText(t, "the "+e.Type+" event of the refused call", e.raw, tenantName, regionName, tenantValue)
	}
	rtWantCall(t, events, "c2", "srv", "status", "auto_allowed", false)

	if calls := rtToolCallsOf(t, readRecord(t, record), "lookup"); len(calls) != 0 {
		t.Errorf("the injected call reached the server %d times: %s", len(calls), calls[0].Message)
	}
	if calls := rtToolCallsOf(t, readRecord(t, record), "status"); len(calls) != 1 {
		t.Errorf("the next step's call reached the server %d times, want 1", len(calls))
	}

	rec := model.wantNoFailures(t)
	if len(rec) != 3 {
		t.Fatalf("model got %d requests, want 3", len(rec))
	}
	refusal, ok := rtToolMessages(rec.MessagesOf(1))["c1"]
	if !ok || strings.TrimSpace(refusal) == "" {
		t.Fatalf("the model was not told about the refused call (tool message %q, present %t)", refusal, ok)
	}
	rtWantNoText(t, "the refusal the model got", refusal, tenantName, regionName, tenantValue, "lookup ok")
	// The model never sees the tool's secure fields, apart from the name it
	// made up itself in its own tool call.
	for i := range rec {
		for _, m := range rec.MessagesOf(i) {
			if m.Role != "assistant" {
				rtWantNoText(t, "a "+m.Role+" message to the model", m.Text(), tenantName, regionName, tenantValue)
			}
		}
		rtWantNoText(t, "the tools payload", string(rec.ToolsOf(i)), tenantName, regionName)
	}
	rtWantNoText(t, "the model requests", rec.AllText(), regionName, tenantValue)

	byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(cfg)))
	blocked := rtWantAudit(t, byCall, "c1", "lookup", "deny", "injection_blocked", "not_executed")
	rtJSONEqual(t, "audit arguments of the refused call", json.RawMessage(mustJSON(injected)), blocked.Arguments)
	rtWantAudit(t, byCall, "c2", "status", "allow", "auto_allowed", "ok")
}

// TestRtOutputFormats: agenthost-json prints one session_end object
// carrying the final assistant text and nothing else (json prints Claude
// Code's result instead: TestCcJSON); text prints the assistant text on
// stdout and tool activity elsewhere.
func TestRtOutputFormats(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status-tool-output"}},
	})
	script := modeltest.Script{
		{Text: "Let me check.", ToolCalls: []modeltest.ToolCall{rtCall("c1", "srv__status", obj{})}},
		rtText("The answer is 42."),
	}

	t.Run("agenthost-json", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, "")}})
		r := run(t, nil, "--config", cfg, "run", "what is it?", "--output-format", "agenthost-json")
		wantCode(t, r, 0)
		dec := json.NewDecoder(strings.NewReader(r.stdout))
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("stdout is not a JSON object: %v\n%s", err, r)
		}
		var extra any
		if err := dec.Decode(&extra); err == nil {
			t.Fatalf("stdout holds more than one JSON value (second: %v)\n%s", extra, r)
		}
		if doc["type"] != "session_end" || doc["reason"] != "done" || doc["steps"] != float64(2) || doc["usage"] == nil {
			t.Errorf("the object is not the final session_end (done, 2 steps, usage): %v", doc)
		}
		var texts []string
		for _, v := range doc {
			if s, ok := v.(string); ok {
				texts = append(texts, s)
			}
		}
		if !slices.Contains(texts, "The answer is 42.") {
			t.Errorf("the object does not carry the final assistant text as a value: %v", doc)
		}
		rtWantNoText(t, "agenthost-json stdout", r.stdout, "Let me check.", "status-tool-output", "tool_call")
		model.wantNoFailures(t)
	})

	t.Run("text", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, "")}})
		r := run(t, nil, "--config", cfg, "run", "what is it?")
		wantCode(t, r, 0)
		if !strings.HasSuffix(strings.TrimSpace(r.stdout), "The answer is 42.") {
			t.Errorf("stdout does not end with the final assistant text\n%s", r)
		}
		if !strings.Contains(r.stdout, "Let me check.") {
			t.Errorf("stdout lacks the first assistant text\n%s", r)
		}
		rtWantNoText(t, "text stdout", r.stdout, "status-tool-output", "{", "session_end")
		model.wantNoFailures(t)
	})
}

// TestRtMaxSteps: a model that keeps calling tools is stopped after
// --max-steps model requests, with exit code 7.
func TestRtMaxSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status ok"}},
	})
	record := filepath.Join(dir, "record.jsonl")
	var script modeltest.Script
	for _, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		script = append(script, rtCalls(rtCall(id, "srv__status", obj{"n": id})))
	}
	model := rtStartModel(t, script)
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, record)}})

	r := run(t, nil, "--config", cfg, "run", "loop", "--max-steps", "2", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 7)
	events := rtEvents(t, r)
	rtEnd(t, events, "max_steps", 2)
	if n := len(rtOfType(events, "tool_call")); n != 2 {
		t.Errorf("%d tool calls ran, want 2", n)
	}
	if n := len(model.wantNoFailures(t)); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
	if n := len(withMethod(readRecord(t, record), "tools/call")); n != 2 {
		t.Errorf("the server got %d calls, want 2", n)
	}
}

// TestRtModelFaults: a rate limit is retried; a model endpoint that keeps
// failing ends the turn with an error event and exit 1, without a crash.
func TestRtModelFaults(t *testing.T) {
	t.Parallel()

	t.Run("429_then_ok", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, modeltest.Script{{Status: 429, RetryAfter: "0", Body: "slow down"}, rtText("recovered")})
		cfg := writeConfig(t, obj{"llm": model.llm()})
		r := run(t, nil, "--config", cfg, "run", "hi")
		wantCode(t, r, 0)
		if strings.TrimSpace(r.stdout) != "recovered" {
			t.Errorf("stdout %q, want the answer after the retry", r.stdout)
		}
		rec := model.wantNoFailures(t)
		if len(rec) != 2 || !bytes.Equal(rec[0].Body, rec[1].Body) {
			t.Errorf("model got %d requests, want the rate-limited one and the same again", len(rec))
		}
	})

	t.Run("500_until_budget_ends", func(t *testing.T) {
		t.Parallel()
		apiKey := newCanary(t, "apikey")
		var script modeltest.Script
		for range 8 {
			script = append(script, modeltest.Step{Status: 500, RetryAfter: "0"})
		}
		// Reached only if the retries were unbounded.
		script = append(script, rtText("unreachable"))
		model := rtStartModel(t, script)
		llm := model.llm()
		llm["apiKey"] = apiKey
		cfg := writeConfig(t, obj{"llm": llm})
		r := run(t, nil, "--config", cfg, "run", "hi", "--output-format", "agenthost-stream-json")
		wantCode(t, r, 1)
		rtNoCrash(t, r)
		wantNoCanary(t, r, apiKey)
		events := rtEvents(t, r)
		rtEnd(t, events, "error", 1)
		errs := rtOfType(events, "error")
		if len(errs) != 1 || strings.TrimSpace(errs[0].Error) == "" {
			t.Errorf("want one error event with a message, got %d: %v", len(errs), rtTypes(events))
		}
		if n := len(model.recording(t)); n < 2 || n > 8 {
			t.Errorf("model got %d requests, want a bounded number of retries (2..8)", n)
		}
	})
}

// TestRtServerDiesMidTurn: a stdio server dies while running a call. The
// model is told the call failed, the turn goes on, and the next call of the
// same server starts it again.
func TestRtServerDiesMidTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "crash", "inputSchema": obj{"type": "object"}, "x-test": obj{"die": true}},
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status ok"}},
	})
	record := filepath.Join(dir, "record.jsonl")
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "svc__crash", obj{})),
		rtCalls(rtCall("c2", "svc__status", obj{})),
		rtText("Done anyway."),
	})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"svc": stdioServer(tools, record)}})

	r := run(t, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	wantCode(t, r, 0)
	rtNoCrash(t, r)
	events := rtEvents(t, r)
	rtEnd(t, events, "done", 3)
	rtWantCall(t, events, "c1", "svc", "crash", "auto_allowed", true)
	res := rtWantCall(t, events, "c2", "svc", "status", "auto_allowed", false)
	if !strings.Contains(res.text(), "status ok") {
		t.Errorf("the call after the crash returned %q, want status ok", res.text())
	}

	rec := model.wantNoFailures(t)
	if len(rec) != 3 {
		t.Fatalf("model got %d requests, want 3", len(rec))
	}
	if told := rtToolMessages(rec.MessagesOf(1))["c1"]; strings.TrimSpace(told) == "" {
		t.Errorf("the model was not told that the crashed call failed")
	}

	recs := readRecord(t, record)
	hs := rtHandshakes(recs)
	if len(hs) != 2 {
		t.Fatalf("record shows %d handshakes (%v), want 2: the server was not started again", len(hs), methods(recs))
	}
	status := -1
	for i, rr := range recs {
		if rr.rpc().Method == "tools/call" && jsonField[string](t, rr.rpc().Params, "name") == "status" {
			status = i
		}
	}
	if status < hs[1] {
		t.Errorf("the status call (record line %d) did not go to the restarted server (handshake at %d): %v", status, hs[1], methods(recs))
	}

	byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(cfg)))
	rtWantAudit(t, byCall, "c1", "crash", "allow", "auto_allowed", "server_error")
	rtWantAudit(t, byCall, "c2", "status", "allow", "auto_allowed", "ok")
}

// TestRtInterrupt: SIGINT during a turn (the model hanging, or a tool
// hanging) ends it promptly with exit 130 and session_end interrupted, and
// the audit file stays valid JSON lines.
func TestRtInterrupt(t *testing.T) {
	t.Parallel()
	for _, hangIn := range []string{"model", "tool"} {
		t.Run(hangIn, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tools := writeJSON(t, dir, "tools.json", []obj{
				{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status ok"}},
				{"name": "stuck", "inputSchema": obj{"type": "object"}, "x-test": obj{"hang": true}},
			})
			record := filepath.Join(dir, "record.jsonl")
			script := modeltest.Script{rtCalls(rtCall("c1", "svc__status", obj{}))}
			if hangIn == "model" {
				script = append(script, modeltest.Step{Hang: true})
			} else {
				script = append(script, rtCalls(rtCall("c2", "svc__stuck", obj{})), rtText("unreachable"))
			}
			model := rtStartModel(t, script)
			cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"svc": stdioServer(tools, record)}})

			p := rtStart(t, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
			if hangIn == "model" {
				waitFor(t, 20*time.Second, "the second model request", func() bool { return len(model.recording(t)) >= 2 })
			} else {
				waitFor(t, 20*time.Second, "the hanging tools/call", func() bool {
					return len(rtToolCallsOf(t, readRecord(t, record), "stuck")) == 1
				})
			}
			signalled := time.Now()
			if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatalf("sending SIGINT: %v", err)
			}
			r := p.wait(t, 10*time.Second)
			if took := time.Since(signalled); took > 5*time.Second {
				t.Errorf("agenthost took %s to exit after SIGINT", took)
			}
			wantCode(t, r, 130)
			rtNoCrash(t, r)
			events := rtEvents(t, r)
			rtEnd(t, events, "interrupted", 2)
			rtWantCall(t, events, "c1", "svc", "status", "auto_allowed", false)

			byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(cfg)))
			rtWantAudit(t, byCall, "c1", "status", "allow", "auto_allowed", "ok")
			if hangIn == "tool" {
				// The interrupted call was allowed and sent; its record must
				// be there, and must not claim success.
				if a, ok := byCall["c2"]; !ok || a.Result == "ok" || a.Outcome != "auto_allowed" {
					t.Errorf("audit of the interrupted call: %+v (present %t), want auto_allowed and not ok", a, ok)
				}
			}
		})
	}
}
