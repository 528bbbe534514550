package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestLegacySSE runs @modelcontextprotocol/server-everything over the legacy
// HTTP+SSE transport (`type: sse`): it connects and its echo tool
// round-trips.
func TestLegacySSE(t *testing.T) {
	t.Parallel()
	addr := startEverything(t, "sse")
	cfg := writeConfig(t, obj{"mcpServers": obj{"everything": obj{"type": "sse", "url": fmt.Sprintf("http://%s/sse", addr)}}})

	r := run(t, nil, "--config", cfg, "servers", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[serversDoc](t, r).server(t, "everything")
	if s.Status != "connected" || s.Tools == 0 {
		t.Fatalf("server-everything over SSE: status %q with %d tools\n%s", s.Status, s.Tools, r)
	}
	r = run(t, nil, "--config", cfg, "call", "everything", "echo", "--args", `{"message":"over sse"}`, "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "over sse") {
		t.Errorf("echo over SSE did not echo\n%s", r)
	}
}

// TestExtensionAliases: the extension ids are configurable per server, and
// an alias (the Google MCP Toolbox id) negotiates the same wire shape; a
// server that advertises none of the configured ids gets no secureArguments
// and its secure tools are excluded.
func TestExtensionAliases(t *testing.T) {
	t.Parallel()
	const toolbox = "com.google.cloud/toolbox.v1"
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "search_orders", "inputSchema": obj{"type": "object", "properties": obj{"query": obj{"type": "string"}}},
		"secureInputSchema": obj{"type": "object", "properties": obj{"tenant_id": obj{"type": "string"}}, "required": []string{"tenant_id"}},
	}})
	tests := []struct {
		name       string
		advertised string
		configured []string
		negotiated bool
	}{
		{"alias negotiated", toolbox, []string{secureExt, toolbox}, true},
		{"alias only", toolbox, []string{toolbox}, true},
		{"no common id", toolbox, []string{secureExt}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			record := t.TempDir() + "/record.jsonl"
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"tb": func() obj {
					e := stdioServer(tools, record, "--extension", tc.advertised)
					e["protocolVersion"] = modernVersion
					e["secureParams"] = obj{"extensions": tc.configured}
					return e
				}()},
				"bindings": []obj{{"server": "tb", "params": values(map[string]any{"tenant_id": "acme"})}},
			})
			r := run(t, nil, "--config", cfg, "tools", "--json")
			wantCode(t, r, 0)
			srv := decodeStdout[toolsDoc](t, r).server(t, "tb")
			if srv.SecureParams != tc.negotiated {
				t.Errorf("secureParams = %v, want %v", srv.SecureParams, tc.negotiated)
			}
			if !tc.negotiated {
				// The server falls back (SEP-3221): a client without the
				// extension is not offered tools it cannot fill.
				if n := len(srv.tools()["search_orders"]); n != 0 {
					t.Errorf("search_orders offered %d times without the extension", n)
				}
				for _, rec := range readRecord(t, record) {
					if strings.Contains(string(rec.Message), "secureArguments") {
						t.Errorf("secureArguments sent without a negotiated extension: %s", rec.Message)
					}
				}
				return
			}
			if tool := srv.tool(t, "search_orders"); tool.Status != "active" {
				t.Fatalf("search_orders is %s (%s), want active", tool.Status, reasonOf(tool))
			}
			r = run(t, nil, "--config", cfg, "call", "tb", "search_orders", "--args", `{"query":"x"}`, "--json")
			wantCode(t, r, 0)
			calls := withMethod(readRecord(t, record), "tools/call")
			if len(calls) != 1 || !strings.Contains(string(calls[0].Message), `"secureArguments":{"tenant_id":"acme"}`) {
				t.Errorf("tools/call did not carry the secure value: %v", calls)
			}
			for _, rec := range readRecord(t, record) {
				if rec.isRequest() && !strings.Contains(string(rec.Message), toolbox) {
					t.Errorf("request without the alias declared: %s", rec.Message)
				}
			}
		})
	}
}

// TestURLFallsBackToLegacySSE: `call --url` and `tools --url` without
// --transport try streamable HTTP, then the legacy HTTP+SSE transport, and
// say so; an explicit --transport is taken at its word.
func TestURLFallsBackToLegacySSE(t *testing.T) {
	t.Parallel()
	addr := startEverything(t, "sse")
	url := fmt.Sprintf("http://%s/sse", addr)

	r := run(t, nil, "call", "--url", url, "echo", "--args", `{"message":"fell back"}`, "--approve", "auto", "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); !strings.Contains(doc.text(), "fell back") {
		t.Errorf("echo did not echo\n%s", r)
	}
	if !strings.Contains(r.stderr, "legacy HTTP+SSE transport; connected with --transport sse") {
		t.Errorf("the fallback is not said\n%s", r)
	}

	r = run(t, nil, "tools", "--url", url)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "url (connected") || !strings.Contains(r.stdout, "echo") {
		t.Errorf("tools --url does not list the tools\n%s", r)
	}

	r = run(t, nil, "call", "--url", url, "--transport", "http", "echo", "--args", `{"message":"x"}`, "--approve", "auto")
	if r.code != 6 || strings.Contains(r.stderr, "connected with --transport sse") {
		t.Errorf("an explicit --transport http fell back or did not fail with 6\n%s", r)
	}
}
