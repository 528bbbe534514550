package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/bindings"
)

var sqlInput = obj{"type": "object", "properties": obj{"query": obj{"type": "string"}}, "required": []string{"query"}}

// secureSchema is a secureInputSchema with string properties.
func secureSchema(required []string, names ...string) obj {
	props := obj{}
	for _, n := range names {
		props[n] = obj{"type": "string"}
	}
	if required == nil {
		required = []string{}
	}
	return obj{"type": "object", "properties": props, "required": required}
}

// serverEntry returns an mcpServers entry for the tools file over the given
// transport, and the record file of the server behind it.
func serverFor(t *testing.T, transport, tools, version string, extraArgs ...string) (obj, string) {
	t.Helper()
	var entry obj
	var record string
	if transport == "stdio" {
		record = filepath.Join(t.TempDir(), "record.jsonl")
		entry = stdioServer(tools, record, extraArgs...)
	} else {
		s := startHTTPServer(t, tools, extraArgs...)
		entry, record = obj{"url": s.url}, s.record
	}
	if version != "" {
		entry["protocolVersion"] = version
	}
	return entry, record
}

func secureArgumentsOf(t *testing.T, r recorded) (map[string]any, bool) {
	t.Helper()
	raw, ok := r.rpc().Params["secureArguments"]
	if !ok {
		return nil, false
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("secureArguments is not an object: %s", raw)
	}
	return v, true
}

// TestSecureArgumentsOnEveryRetry: a tool that asks for input twice gets
// the same secureArguments on the first call and on both retries, in both
// eras and over both transports.
func TestSecureArgumentsOnEveryRetry(t *testing.T) {
	t.Parallel()
	want := map[string]any{"instance": "checkout", "project_id": "retail-prod"}
	for _, transport := range []string{"stdio", "http"} {
		for _, version := range []string{legacyVersion, modernVersion} {
			t.Run(transport+"/"+version, func(t *testing.T) {
				t.Parallel()
				tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
					"name": "confirm_sql", "inputSchema": sqlInput,
					"secureInputSchema": secureSchema([]string{"instance", "project_id"}, "instance", "project_id"),
					"x-test":            obj{"inputRequired": 2},
				}})
				entry, record := serverFor(t, transport, tools, version)
				cfg := writeConfig(t, obj{
					"mcpServers": obj{"db": entry},
					"bindings": []obj{{"server": "db", "tools": []string{"confirm_*"}, "params": obj{
						"instance":   obj{"value": "checkout"},
						"project_id": obj{"session": "project"},
					}}},
				})

				r := run(t, nil, "--config", cfg, "call", "db", "confirm_sql", "--args", `{"query":"SELECT 1"}`,
					"--bind", "project=retail-prod", "--approve", "auto", "--json")
				wantCode(t, r, 0)
				if doc := decodeStdout[callDoc](t, r); doc.IsError {
					t.Fatalf("the confirmed call failed\n%s", r)
				}
				calls := withMethod(readRecord(t, record), "tools/call")
				if len(calls) != 3 {
					t.Fatalf("want 3 tools/call (first call and two retries), got %d", len(calls))
				}
				for i, c := range calls {
					got, ok := secureArgumentsOf(t, c)
					if !ok {
						t.Fatalf("round %d carries no secureArguments: %s", i+1, c.Message)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("round %d secureArguments (-want +got):\n%s", i+1, diff)
					}
					_, retry := c.rpc().Params["requestState"]
					if retry != (i > 0) {
						t.Errorf("round %d: requestState present %t, want %t", i+1, retry, i > 0)
					}
				}

				// Without --approve auto (stdin is not a terminal) the input
				// request is declined; the retry still carries the values.
				r = run(t, nil, "--config", cfg, "call", "db", "confirm_sql", "--args", `{"query":"SELECT 1"}`,
					"--bind", "project=retail-prod", "--json")
				wantCode(t, r, 5)
				calls = withMethod(readRecord(t, record), "tools/call")[3:]
				if len(calls) != 2 {
					t.Fatalf("declined: want 2 tools/call, got %d", len(calls))
				}
				for i, c := range calls {
					got, _ := secureArgumentsOf(t, c)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("declined round %d secureArguments (-want +got):\n%s", i+1, diff)
					}
				}
			})
		}
	}
}

// TestNoSecureArgumentsWithoutExtension: secureArguments go only to tools
// listed with a secureInputSchema on servers that negotiated the extension.
func TestNoSecureArgumentsWithoutExtension(t *testing.T) {
	t.Parallel()
	for _, version := range []string{legacyVersion, modernVersion} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
				{"name": "echo", "inputSchema": obj{"type": "object", "properties": obj{"text": obj{"type": "string"}}}},
				{"name": "optional_secure", "inputSchema": sqlInput, "secureInputSchema": secureSchema(nil, "region")},
				{"name": "execute_sql", "inputSchema": sqlInput, "secureInputSchema": secureSchema([]string{"instance"}, "instance")},
			})
			bound, boundRec := serverFor(t, "stdio", tools, version)
			unbound, unboundRec := serverFor(t, "stdio", tools, version)
			// Has bindings, but the server does not offer the extension.
			plain, plainRec := serverFor(t, "stdio", tools, version, "--extension", "none")
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"bound": bound, "unbound": unbound, "plain": plain},
				"bindings": []obj{
					{"server": "bound", "params": values(map[string]any{"region": "eu-west-1", "instance": "checkout"})},
					{"server": "plain", "params": values(map[string]any{"region": "eu-west-1", "instance": "checkout"})},
				},
			})

			r := run(t, nil, "--config", cfg, "servers", "--json")
			wantCode(t, r, 0)
			doc := decodeStdout[serversDoc](t, r)
			for name, want := range map[string]bool{"bound": true, "unbound": false, "plain": false} {
				if got := doc.server(t, name).SecureParams; got != want {
					t.Errorf("%s: secureParams %t, want %t", name, got, want)
				}
			}

			// The control: a secure tool on the bound server gets the values.
			wantCode(t, run(t, nil, "--config", cfg, "call", "bound", "optional_secure", "--args", `{"query":"q"}`), 0)
			wantCode(t, run(t, nil, "--config", cfg, "call", "bound", "echo", "--args", `{"text":"hi"}`), 0)
			for _, name := range []string{"unbound", "plain"} {
				// The test server answers -32021 to a secure tool called
				// without the extension: an operator error (exit 4), and the
				// request that reached it must carry no secureArguments.
				wantCallError(t, run(t, nil, "--config", cfg, "call", name, "optional_secure", "--args", `{"query":"q"}`, "--json"), 4, "binding")
				wantCode(t, run(t, nil, "--config", cfg, "call", name, "echo", "--args", `{"text":"hi"}`), 0)
				// Required secure parameters: the server does not list the tool.
				wantCallError(t, run(t, nil, "--config", cfg, "call", name, "execute_sql", "--args", `{"query":"q"}`, "--json"), 6, "unavailable")
			}

			for name, record := range map[string]string{"bound": boundRec, "unbound": unboundRec, "plain": plainRec} {
				for _, c := range withMethod(readRecord(t, record), "tools/call") {
					tool := jsonField[string](t, c.rpc().Params, "name")
					got, has := secureArgumentsOf(t, c)
					wantHas := name == "bound" && tool == "optional_secure"
					if has != wantHas {
						t.Errorf("%s/%s: secureArguments sent %t (%v), want %t", name, tool, has, got, wantHas)
					}
					if wantHas && got["region"] != "eu-west-1" {
						t.Errorf("%s/%s: secureArguments %v, want region eu-west-1", name, tool, got)
					}
				}
			}
			for name, record := range map[string]string{"bound": boundRec, "unbound": unboundRec, "plain": plainRec} {
				if n := len(withMethod(readRecord(t, record), "tools/call")); n != 2 {
					t.Errorf("%s: %d tools/call recorded, want 2 (optional_secure and echo)", name, n)
				}
			}
		})
	}
}

// TestInjectedSecureNamesRefused: arguments naming a secure parameter (any
// case, separator or depth) are refused with exit 4 and nothing is sent.
func TestInjectedSecureNamesRefused(t *testing.T) {
	t.Parallel()
	for name, args := range map[string]string{
		"exact":        `{"query":"x","instance":"payroll"}`,
		"case":         `{"query":"x","Instance":"payroll"}`,
		"nested":       `{"query":"x","a":{"TENANT-ID":1}}`,
		"in_array":     `{"query":"x","rows":[{"ok":1},{"project_id":"payroll"}]}`,
		"deep_variant": `{"query":"x","a":{"b":{"c":{"Project-Id":"payroll"}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
				"name": "execute_sql", "inputSchema": sqlInput,
				"secureInputSchema": secureSchema([]string{"instance", "project_id"}, "instance", "project_id", "tenant_id"),
			}})
			entry, record := serverFor(t, "stdio", tools, "")
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"srv": entry},
				"bindings": []obj{{"server": "srv", "params": values(map[string]any{
					"instance": "checkout-bound", "project_id": "retail-bound", "tenant_id": "tenant-bound",
				})}},
			})
			r := run(t, nil, "--config", cfg, "call", "srv", "execute_sql", "--args", args, "--json")
			msg := wantCallError(t, r, 4, "binding")
			for _, s := range []string{"payroll", "checkout-bound", "retail-bound", "tenant-bound"} {
				if strings.Contains(r.stdout+r.stderr, s) {
					t.Errorf("output contains %q: %s", s, msg)
				}
			}
			recs := readRecord(t, record)
			if len(recs) == 0 {
				t.Fatal("the server recorded nothing: the test did not reach it")
			}
			if calls := withMethod(recs, "tools/call"); len(calls) != 0 {
				t.Errorf("a refused call reached the server: %s", calls[0].Message)
			}
		})
	}
}

// TestHeaderMirroring: over streamable HTTP in the 2026-07-28 era, a secure
// property with x-mcp-header is mirrored into Mcp-Param-<name> with the
// bound value.
func TestHeaderMirroring(t *testing.T) {
	t.Parallel()
	for _, version := range []string{modernVersion, "auto"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
				"name": "routed_sql", "inputSchema": sqlInput,
				"secureInputSchema": obj{"type": "object", "required": []string{"region"}, "properties": obj{
					"region": obj{"type": "string", "x-mcp-header": "Region"},
				}},
			}})
			entry, record := serverFor(t, "http", tools, version)
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"srv": entry},
				"bindings":   []obj{{"server": "srv", "params": values(map[string]any{"region": "eu-west-9"})}},
			})
			wantCode(t, run(t, nil, "--config", cfg, "call", "srv", "routed_sql", "--args", `{"query":"q"}`, "--json"), 0)
			calls := withMethod(readRecord(t, record), "tools/call")
			if len(calls) != 1 {
				t.Fatalf("want one tools/call, got %d", len(calls))
			}
			if got := calls[0].Headers["Mcp-Param-Region"]; got != "eu-west-9" {
				t.Errorf("header Mcp-Param-Region %q, want eu-west-9; headers %v", got, calls[0].Headers)
			}
			if got, _ := secureArgumentsOf(t, calls[0]); got["region"] != "eu-west-9" {
				t.Errorf("secureArguments %v, want region eu-west-9", got)
			}
		})
	}
}

// TestCanaryNeverPrinted: bound secret and literal values never reach
// stdout or stderr (debug logs included), on success and on every failure
// path, even when the server echoes them back; the record proves they were
// sent.
func TestCanaryNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			envCanary := newCanary(t, "env")
			literalCanary := newCanary(t, "literal")
			sessionCanary := newCanary(t, "session")
			secure := secureSchema([]string{"token", "tenant", "sess"}, "token", "tenant", "sess")
			tool := func(name string, behaviour obj) obj {
				tl := obj{"name": name, "inputSchema": obj{"type": "object"}, "secureInputSchema": secure}
				if behaviour != nil {
					tl["x-test"] = behaviour
				}
				return tl
			}
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
				tool("ok", nil),
				tool("echo_secure", obj{"echoSecure": true}),
				tool("echo_text", obj{"echoSecure": true, "text": "values follow"}),
				// Servers that put the value into their own error texts.
				tool("server_error", obj{"errorCode": -32603, "errorMessage": "no such tenant " + literalCanary + " for token " + envCanary}),
				tool("tool_error", obj{"isError": true, "text": "denied for token " + envCanary + " / " + sessionCanary}),
				tool("pattern", nil),
			})
			// pattern's token must match ^x$: the bound value does not.
			var list []obj
			data, _ := os.ReadFile(tools)
			_ = json.Unmarshal(data, &list)
			list[len(list)-1]["secureInputSchema"] = obj{"type": "object", "required": []string{"token"}, "properties": obj{
				"token": obj{"type": "string", "pattern": "^x$"}, "tenant": obj{"type": "string"}, "sess": obj{"type": "string"},
			}}
			tools = writeJSON(t, filepath.Dir(tools), "tools.json", list)

			entry, record := serverFor(t, transport, tools, "", "--stderr-noise")
			audit := filepath.Join(t.TempDir(), "audit.jsonl")
			cfg := writeConfig(t, obj{
				"mcpServers": obj{"srv": entry},
				"bindings": []obj{{"server": "srv", "params": obj{
					"token":  obj{"env": "E2E_CANARY_TOKEN"},
					"tenant": obj{"value": literalCanary},
					"sess":   obj{"session": "sess"},
				}}},
				"audit": obj{"path": audit},
			})
			env := []string{"E2E_CANARY_TOKEN=" + envCanary}
			canaries := []string{envCanary, literalCanary, sessionCanary}
			common := []string{"--log-level", "debug", "--config", cfg}
			session := []string{"--bind", "sess=" + sessionCanary}
			call := func(tool string, extra ...string) []string {
				return append(append(append(append([]string{}, common...), "call", "srv", tool), session...), extra...)
			}

			for _, c := range []struct {
				args []string
				code int
				echo bool // the result carries the server's echo of the values
			}{
				{args: append(append([]string{}, common...), "servers")},
				{args: append(append([]string{}, common...), "servers", "--json")},
				{args: append(append(append([]string{}, common...), "tools", "--json"), session...)},
				{args: append(append(append([]string{}, common...), "tools"), session...)},
				{args: call("ok", "--json"), code: 0},
				{args: call("ok"), code: 0},
				{args: call("echo_secure", "--json"), code: 0, echo: true},
				{args: call("echo_text", "--json"), code: 0, echo: true},
				{args: call("echo_text"), code: 0},
				{args: call("server_error", "--json"), code: 5},
				{args: call("server_error"), code: 5},
				{args: call("tool_error", "--json"), code: 5},
				{args: call("tool_error"), code: 5},
				{args: call("pattern", "--json"), code: 4},
				{args: call("pattern"), code: 4},
			} {
				r := run(t, env, c.args...)
				if r.code != c.code {
					t.Errorf("exit code %d, want %d\n%s", r.code, c.code, r)
				}
				wantNoCanary(t, r, canaries...)
				if c.echo {
					// The echo is there, with every value masked.
					text := decodeStdout[callDoc](t, r).text()
					if !strings.Contains(text, "secureArguments") || strings.Count(text, bindings.RedactedText) < len(canaries) {
						t.Errorf("want the server's echo with %d masked values, got %q", len(canaries), text)
					}
				}
			}

			rec, err := os.ReadFile(record)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range canaries {
				if !strings.Contains(string(rec), c) {
					t.Errorf("canary %s never reached the server: the test proves nothing", c)
				}
			}
			if a, err := os.ReadFile(audit); err == nil {
				for _, c := range canaries {
					if strings.Contains(string(a), c) {
						t.Errorf("canary %s is in the audit log", c)
					}
				}
			}
		})
	}
}
