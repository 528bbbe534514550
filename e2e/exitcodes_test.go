package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// exitCodeTools covers every outcome of a call.
func exitCodeTools(t *testing.T) string {
	return writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "echo", "inputSchema": obj{"type": "object", "properties": obj{"text": obj{"type": "string"}}}, "x-test": obj{"text": "echoed"}},
		{"name": "execute_sql", "inputSchema": sqlInput, "secureInputSchema": secureSchema([]string{"instance", "project_id"}, "instance", "project_id")},
		{"name": "failing", "inputSchema": obj{"type": "object"}, "x-test": obj{"isError": true, "text": "the tool failed"}},
		{"name": "rpc_error", "inputSchema": obj{"type": "object"}, "x-test": obj{"errorCode": -32603}},
		{"name": "overlap", "inputSchema": obj{"type": "object", "properties": obj{"instance": obj{"type": "string"}}},
			"secureInputSchema": secureSchema([]string{"instance"}, "instance")},
	})
}

// TestCallExitCodes checks each exit code of `call` (docs/cli.md) against
// real processes, with the JSON error kind that goes with it.
func TestCallExitCodes(t *testing.T) {
	t.Parallel()
	tools := exitCodeTools(t)

	// configFor writes a config for one server entry and its bindings.
	configFor := func(t *testing.T, entry obj, params obj) string {
		cfg := obj{"mcpServers": obj{"srv": entry}}
		if params != nil {
			cfg["bindings"] = []obj{{"server": "srv", "params": params}}
		}
		return writeConfig(t, cfg)
	}
	bound := obj{"instance": obj{"value": "checkout"}, "project_id": obj{"value": "retail-prod"}}

	t.Run("ok", func(t *testing.T) {
		t.Parallel()
		entry, record := serverFor(t, "stdio", tools, "")
		cfg := configFor(t, entry, bound)
		r := run(t, nil, "--config", cfg, "call", "srv", "execute_sql", "--args", `{"query":"SELECT 1"}`, "--json")
		wantCode(t, r, 0)
		doc := decodeStdout[callDoc](t, r)
		if doc.Error != nil || doc.IsError || doc.Server != "srv" || doc.Tool != "execute_sql" || len(doc.Content) == 0 {
			t.Errorf("unexpected result document\n%s", r)
		}
		if n := len(withMethod(readRecord(t, record), "tools/call")); n != 1 {
			t.Errorf("%d tools/call recorded, want 1", n)
		}
		r = run(t, nil, "--config", cfg, "call", "srv", "echo", "--args", `{"text":"hi"}`)
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "echoed") {
			t.Errorf("the text output lacks the tool's text\n%s", r)
		}
	})

	t.Run("config_unknown_key", func(t *testing.T) {
		t.Parallel()
		cfg := writeFile(t, t.TempDir(), "agenthost.yaml", []byte("mcpServers:\n  srv:\n    comand: ./server\n"))
		r := run(t, nil, "--config", cfg, "call", "srv", "echo")
		wantCode(t, r, 2)
		for _, want := range []string{filepath.Base(cfg), "mcpServers.srv.comand"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the message does not name %q\n%s", want, r)
			}
		}
		msg := wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "echo", "--json"), 2, "config")
		if !strings.Contains(msg, "mcpServers.srv.comand") {
			t.Errorf("JSON message does not name the key: %q", msg)
		}
	})

	t.Run("config_unset_variable", func(t *testing.T) {
		t.Parallel()
		cfg := writeFile(t, t.TempDir(), "agenthost.yaml",
			[]byte("mcpServers:\n  srv:\n    command: ${E2E_UNSET_COMMAND}\n"))
		r := run(t, nil, "--config", cfg, "call", "srv", "echo")
		wantCode(t, r, 2)
		for _, want := range []string{filepath.Base(cfg), "E2E_UNSET_COMMAND"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("the message does not name %q\n%s", want, r)
			}
		}
	})

	for name, params := range map[string]obj{
		"unbound_required": {"project_id": obj{"value": "retail-prod"}},
		"binding_failed":   {"project_id": obj{"value": "retail-prod"}, "instance": obj{"env": "E2E_UNSET_INSTANCE"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entry, record := serverFor(t, "stdio", tools, "")
			cfg := configFor(t, entry, params)
			wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "execute_sql", "--args", `{"query":"q"}`, "--json"), 4, "binding")
			recs := readRecord(t, record)
			if len(recs) == 0 {
				t.Fatal("the server recorded nothing: the test did not reach it")
			}
			if n := len(withMethod(recs, "tools/call")); n != 0 {
				t.Errorf("%d tools/call recorded, want none", n)
			}
		})
	}

	t.Run("tool_is_error", func(t *testing.T) {
		t.Parallel()
		entry, _ := serverFor(t, "stdio", tools, "")
		cfg := configFor(t, entry, bound)
		r := run(t, nil, "--config", cfg, "call", "srv", "failing", "--json")
		wantCode(t, r, 5)
		if doc := decodeStdout[callDoc](t, r); !doc.IsError || !strings.Contains(doc.text(), "the tool failed") {
			t.Errorf("want the isError result printed\n%s", r)
		}
	})

	for _, transport := range []string{"stdio", "http"} {
		t.Run("server_error/"+transport, func(t *testing.T) {
			t.Parallel()
			entry, _ := serverFor(t, transport, tools, "")
			cfg := configFor(t, entry, bound)
			msg := wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "rpc_error", "--json"), 5, "tool_error")
			if !strings.Contains(msg, "-32603") {
				t.Errorf("the message does not give the error code: %q", msg)
			}
		})
	}

	t.Run("unknown_tool", func(t *testing.T) {
		t.Parallel()
		entry, _ := serverFor(t, "stdio", tools, "")
		cfg := configFor(t, entry, bound)
		msg := wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "no_such_tool", "--json"), 6, "unavailable")
		if !strings.Contains(msg, "no_such_tool") {
			t.Errorf("the message does not name the tool: %q", msg)
		}
	})

	t.Run("excluded_tool", func(t *testing.T) {
		t.Parallel()
		entry, record := serverFor(t, "stdio", tools, "")
		cfg := configFor(t, entry, bound)
		wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "overlap", "--json"), 6, "unavailable")
		if n := len(withMethod(readRecord(t, record), "tools/call")); n != 0 {
			t.Errorf("an excluded tool was called (%d tools/call)", n)
		}
	})

	t.Run("unreachable_command", func(t *testing.T) {
		t.Parallel()
		missing := filepath.Join(t.TempDir(), "no-such-server")
		cfg := configFor(t, obj{"command": missing}, nil)
		msg := wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "echo", "--json"), 6, "unavailable")
		if !strings.Contains(msg, "no-such-server") {
			t.Errorf("the message does not name the command: %q", msg)
		}
	})

	t.Run("unreachable_url", func(t *testing.T) {
		t.Parallel()
		cfg := configFor(t, obj{"url": closedLoopbackURL(t), "connectTimeout": "5s"}, nil)
		r := run(t, nil, "--config", cfg, "call", "srv", "echo", "--json")
		wantCallError(t, r, 6, "unavailable")
	})

	t.Run("adhoc_url", func(t *testing.T) {
		t.Parallel()
		s := startHTTPServer(t, tools)
		// No operator policy: the person running the call answers one ask,
		// here --approve auto; without it (no terminal) the ask is denied.
		wantCallError(t, run(t, nil, "call", "--url", s.url, "echo", "--args", `{"text":"hi"}`, "--json"), 3, "denied")
		if n := len(withMethod(readRecord(t, s.record), "tools/call")); n != 0 {
			t.Errorf("a denied ad-hoc call reached the server (%d tools/call)", n)
		}
		r := run(t, nil, "call", "--url", s.url, "echo", "--args", `{"text":"hi"}`, "--approve", "auto", "--json")
		wantCode(t, r, 0)
		if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "echoed") {
			t.Errorf("unexpected ad-hoc result\n%s", r)
		}
		if n := len(withMethod(readRecord(t, s.record), "tools/call")); n != 1 {
			t.Errorf("%d tools/call recorded, want 1", n)
		}
		wantCallError(t, run(t, nil, "call", "--url", s.url, "no_such_tool", "--approve", "auto", "--json"), 6, "unavailable")
		wantCallError(t, run(t, nil, "call", "--url", s.url, "--transport", "carrier-pigeon", "echo", "--json"), 2, "config")
		wantCallError(t, run(t, nil, "call", "--url", closedLoopbackURL(t), "echo", "--approve", "auto", "--json"), 6, "unavailable")
	})
}
