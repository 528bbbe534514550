package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// fanOutDefs returns $defs a0..a(n-1), each applying the next twice
// through anyOf: about 1 KB that a validator unfolds 2^n times.
func fanOutDefs(n int) obj {
	defs := obj{}
	for i := 0; i < n-1; i++ {
		next := obj{"$ref": fmt.Sprintf("#/$defs/a%d", i+1)}
		defs[fmt.Sprintf("a%d", i)] = obj{"anyOf": []obj{next, next}}
	}
	defs[fmt.Sprintf("a%d", n-1)] = obj{"type": "string"}
	return defs
}

// TestRtHostileValidation: numbers the JSON Schema validator cannot parse
// and schemas whose validation explodes. Bombs are excluded at listing time
// with a reason; a model argument such as 1e100000000 is refused back to the
// model (the host used to panic, ending every session of the process); the
// run goes on.
func TestRtHostileValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	huge := json.RawMessage("1e-100000000")
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "bounded", "inputSchema": obj{"type": "object", "properties": obj{
			"n": obj{"type": "number", "maximum": 10}, "l": obj{"type": "array", "uniqueItems": true}}},
			"x-test": obj{"text": "bounded ok"}},
		{"name": "tiny_step", "inputSchema": obj{"type": "object", "properties": obj{"n": obj{"multipleOf": huge}}}},
		{"name": "input_bomb", "inputSchema": obj{"type": "object", "properties": obj{"q": obj{"$ref": "#/$defs/a0"}}, "$defs": fanOutDefs(25)}},
		{"name": "recursive_bomb", "inputSchema": obj{"type": "object", "anyOf": []obj{
			{"properties": obj{"a": obj{"$ref": "#"}}}, {"properties": obj{"a": obj{"$ref": "#"}}}}}},
		{"name": "secure_bomb", "inputSchema": obj{"type": "object"}, "secureInputSchema": obj{"type": "object",
			"properties": obj{"tenant_id": obj{"$ref": "#/$defs/a0"}}, "$defs": fanOutDefs(25)}},
	})
	record := filepath.Join(dir, "record.jsonl")
	hugeArgs := `{"n":1e100000000}`
	uniqueArgs := `{"l":[` + strings.Repeat("1.5,", 25) + `-1E+100000000]}`
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "svc__bounded", hugeArgs)),
		rtCalls(rtCall("c2", "svc__bounded", uniqueArgs)),
		rtCalls(rtCall("c3", "svc__bounded", `{"n":5}`)),
		rtText("done"),
	})
	cfg := writeConfig(t, obj{
		"llm":        model.llm(),
		"mcpServers": obj{"svc": stdioServer(tools, record)},
		"bindings":   []obj{{"server": "svc", "params": values(map[string]any{"tenant_id": "acme"})}},
	})

	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[toolsDoc](t, r).server(t, "svc")
	if tl := s.tool(t, "bounded"); tl.Status != "active" {
		t.Errorf("bounded: status %q (%s), want active", tl.Status, reasonOf(tl))
	}
	for name, want := range map[string]string{
		"tiny_step":      "inputSchema has a number at /properties/n/multipleOf",
		"input_bomb":     "inputSchema expands to more than",
		"recursive_bomb": "inputSchema expands to more than",
		"secure_bomb":    "secureInputSchema expands to more than",
	} {
		if tl := s.tool(t, name); tl.Status != "excluded" || !strings.Contains(reasonOf(tl), want) {
			t.Errorf("%s: status %q reason %q, want excluded with %q", name, tl.Status, reasonOf(tl), want)
		}
	}

	r = run(t, nil, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	rtNoCrash(t, r)
	wantCode(t, r, 0)
	events := rtEvents(t, r)
	rtEnd(t, events, "done", 4)
	for _, id := range []string{"c1", "c2"} {
		var result *streamEvent
		for _, e := range rtOfCall(events, id) {
			if e.Type == "tool_result" {
				result = &e
			}
		}
		if result == nil || result.IsError == nil || !*result.IsError || !strings.Contains(result.text(), "cannot be checked") {
			t.Errorf("%s: want a tool_result refusing the arguments, got %+v", id, rtOfCall(events, id))
		}
	}
	calls := rtToolCallsOf(t, readRecord(t, record), "bounded")
	if len(calls) != 1 {
		t.Errorf("%d tools/call of bounded reached the server, want only the valid one", len(calls))
	}
}

// TestRtSigterm: SIGTERM during a turn (the model hanging) ends the process
// promptly, as SIGINT does, with the audit file intact.
func TestRtSigterm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status ok"}},
	})
	model := rtStartModel(t, modeltest.Script{rtCalls(rtCall("c1", "svc__status", obj{})), modeltest.Step{Hang: true}})
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"svc": stdioServer(tools, "")}})

	p := rtStart(t, "--config", cfg, "run", "go", "--output-format", "agenthost-stream-json")
	waitFor(t, 20*time.Second, "the second model request", func() bool { return len(model.recording(t)) >= 2 })
	signalled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("sending SIGTERM: %v", err)
	}
	r := p.wait(t, 10*time.Second)
	if took := time.Since(signalled); took > 5*time.Second {
		t.Errorf("agenthost took %s to exit after SIGTERM", took)
	}
	wantCode(t, r, 130)
	rtNoCrash(t, r)
	rtEnd(t, rtEvents(t, r), "interrupted", 2)
	byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(cfg)))
	rtWantAudit(t, byCall, "c1", "status", "allow", "auto_allowed", "ok")
}
