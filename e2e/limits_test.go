package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestFtProtocolErrorsFailAtOnce: a server answer the host cannot take (a
// garbage line, a message beyond limits.maxResponseBytes, a listing nested
// beyond the JSON decoder's limit) fails the request at once with a
// protocol error that says what was wrong, never after the 60s call or
// connect timeout. The 20s run timeout is the failure signal.
func TestFtProtocolErrorsFailAtOnce(t *testing.T) {
	t.Parallel()
	const secret = "sk-garbage-canary"
	schema := obj{"type": "object"}
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "noisy", "inputSchema": schema, "x-test": obj{"garbage": "this is not JSON { " + secret}},
		{"name": "big", "inputSchema": schema, "x-test": obj{"text": strings.Repeat("b", 200<<10)}},
		{"name": "ok", "inputSchema": schema},
	})
	httpSrv := startHTTPServer(t, tools)
	cfg := writeConfig(t, obj{
		"limits": obj{"maxResponseBytes": 64 << 10},
		"mcpServers": obj{
			"stdio":  obj{"command": testServerBin, "args": []string{"--tools", tools}, "callTimeout": "60s", "connectTimeout": "60s"},
			"http":   obj{"url": httpSrv.url, "callTimeout": "60s", "connectTimeout": "60s"},
			"nested": obj{"command": testServerBin, "args": []string{"--tools", tools, "--nested-list", "20000"}, "connectTimeout": "60s"},
		},
	})
	const within = 20 * time.Second

	tests := []struct {
		server, tool, want string
	}{
		{"stdio", "noisy", "stdio/noisy: server sent a response that is not valid JSON-RPC: not JSON (syntax error at byte 2)"},
		{"stdio", "big", "stdio/big: server sent a message larger than 64 KiB (limits.maxResponseBytes)"},
		{"http", "big", "http/big: server sent a message larger than 64 KiB (limits.maxResponseBytes)"},
	}
	for _, tc := range tests {
		r := runWithTimeout(t, within, nil, "--config", cfg, "call", tc.server, tc.tool, "--json")
		msg := wantCallError(t, r, 5, "tool_error")
		if msg != tc.want {
			t.Errorf("%s/%s: error %q, want %q", tc.server, tc.tool, msg, tc.want)
		}
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("%s/%s: the garbage is quoted:\n%s", tc.server, tc.tool, r)
		}
	}

	r := runWithTimeout(t, within, nil, "--config", cfg, "servers", "--json")
	wantCode(t, r, 6) // a server is unavailable
	s := decodeStdout[serversDoc](t, r).server(t, "nested")
	if s.Status != "error" || s.Error == nil || !strings.Contains(*s.Error, "tools/list: transport error: server sent a response that is not valid JSON-RPC: nested too deeply") {
		t.Errorf("nested: status %q error %v, want the protocol error", s.Status, s.Error)
	}
}

// TestFtOversizedToolsAreBounded: a tool definition beyond
// limits.maxDefinitionBytes is excluded with the reason; a tool result
// beyond limits.maxModelResultBytes reaches the model cut, with a note.
func TestFtOversizedToolsAreBounded(t *testing.T) {
	t.Parallel()
	schema := obj{"type": "object"}
	result := strings.Repeat("r", 40<<10)
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "huge", "description": strings.Repeat("d", 20<<10), "inputSchema": schema},
		{"name": "dump", "inputSchema": schema, "x-test": obj{"text": result}},
	})
	model := rtStartModel(t, modeltest.Script{rtCalls(rtCall("c1", "s__dump", obj{})), rtText("done")})
	cfg := writeConfig(t, obj{
		"llm":        model.llm(),
		"limits":     obj{"maxDefinitionBytes": 8 << 10, "maxModelResultBytes": 16 << 10},
		"mcpServers": obj{"s": stdioServer(tools, "")},
	})

	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	huge := decodeStdout[toolsDoc](t, r).server(t, "s").tool(t, "#0")
	if want := `the definition of "huge" is 20.1 KiB, more than limits.maxDefinitionBytes (8 KiB)`; huge.Status != "excluded" || reasonOf(huge) != want {
		t.Errorf("huge: %s %q, want excluded with %q", huge.Status, reasonOf(huge), want)
	}

	r = run(t, nil, "--config", cfg, "run", "go")
	wantCode(t, r, 0)
	rec := model.wantNoFailures(t)
	var sent string
	for _, m := range rec.MessagesOf(1) {
		if m.Role == "tool" {
			sent = m.Text()
		}
	}
	note := "\n[agenthost: the tool result was cut here: 24576 of its 40960 bytes were left out (limits.maxModelResultBytes is 16384)]"
	if sent != result[:16<<10]+note {
		t.Errorf("the model got %d bytes ending %q, want 16 KiB and the note", len(sent), sent[max(0, len(sent)-150):])
	}
}
