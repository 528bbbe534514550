package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestCallChecksTheInputSchema: `call` takes the pipeline a model's call
// takes, inputSchema check included: arguments that do not match are
// refused with the validator's message (exit 5) and nothing is sent;
// matching ones run.
func TestCallChecksTheInputSchema(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "record.jsonl")
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "get_order", "inputSchema": obj{"type": "object", "properties": obj{"id": obj{"type": "string"}}, "required": []string{"id"}},
			"annotations": obj{"readOnlyHint": true}, "x-test": obj{"text": "order 7"}},
	})
	cfg := writeConfig(t, obj{"mcpServers": obj{"shop": stdioServer(tools, record)}})

	r := run(t, nil, "--config", cfg, "call", "shop", "get_order", "--args", `{"id": 7}`, "--json")
	msg := wantCallError(t, r, 5, "tool_error")
	if !strings.Contains(msg, "inputSchema") {
		t.Errorf("the refusal does not say why: %s", msg)
	}
	if calls := withMethod(readRecord(t, record), "tools/call"); len(calls) != 0 {
		t.Errorf("a call that does not match the inputSchema was sent: %d tools/call", len(calls))
	}

	r = run(t, nil, "--config", cfg, "call", "shop", "get_order", "--args", `{"id": "7"}`, "--json")
	wantCode(t, r, 0)
	if calls := withMethod(readRecord(t, record), "tools/call"); len(calls) != 1 {
		t.Errorf("%d tools/call after a matching call, want 1", len(calls))
	}
}

// TestCallURLThatIsNoMCPServer: `call --url` and `tools --url` at a web
// server that answers with HTML error pages say so in one readable line
// each: no log lines, no HTML, exit 6.
func TestCallURLThatIsNoMCPServer(t *testing.T) {
	t.Parallel()
	page := "<!DOCTYPE HTML>\n<html><body><h1>Error response</h1><p>Error code: 501</p></body></html>\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusNotImplemented)
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	for _, args := range [][]string{{"call", "--url", srv.URL + "/mcp", "echo"}, {"tools", "--url", srv.URL + "/mcp"}} {
		r := run(t, nil, args...)
		wantCode(t, r, 6)
		out := r.stdout + r.stderr
		for _, bad := range []string{"level=WARN", "<html", "<!DOCTYPE", "Error response"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: the output holds %q\n%s", args[0], bad, r)
			}
		}
		if !strings.Contains(out, "status 501") {
			t.Errorf("%s: the output does not say what the server answered\n%s", args[0], r)
		}
	}
}
