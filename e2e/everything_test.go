package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// everythingConfig runs @modelcontextprotocol/server-everything over stdio.
func everythingConfig(t *testing.T, env obj) string {
	t.Helper()
	node, script := everythingServer(t)
	entry := obj{"command": node, "args": []string{script}}
	if env != nil {
		entry["env"] = env
	}
	return writeConfig(t, obj{"mcpServers": obj{"everything": entry}})
}

// TestServerEverything runs the reference MCP server from npm: it connects,
// its echo tool is offered with its inputSchema, and a call round-trips.
func TestServerEverything(t *testing.T) {
	t.Parallel()
	cfg := everythingConfig(t, nil)

	r := run(t, nil, "--config", cfg, "servers", "--json")
	wantCode(t, r, 0)
	s := decodeStdout[serversDoc](t, r).server(t, "everything")
	if s.Status != "connected" || s.Tools == 0 {
		t.Fatalf("server-everything: status %q with %d tools, want connected with tools\n%s", s.Status, s.Tools, r)
	}
	if s.SecureParams {
		t.Errorf("server-everything has no bindings, yet secureParams is true")
	}

	r = run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	echo := decodeStdout[toolsDoc](t, r).server(t, "everything").tool(t, "echo")
	if echo.Status != "active" {
		t.Errorf("echo: status %q (%s), want active", echo.Status, reasonOf(echo))
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(echo.InputSchema, &schema); err != nil {
		t.Fatalf("echo inputSchema: %v: %s", err, echo.InputSchema)
	}
	if schema.Type != "object" || schema.Properties["message"] == nil || !slices.Contains(schema.Required, "message") {
		t.Errorf("echo inputSchema lacks the required message property: %s", echo.InputSchema)
	}

	r = run(t, nil, "--config", cfg, "call", "everything", "echo", "--args", `{"message":"hi"}`, "--json")
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "hi") {
		t.Errorf("echo did not echo\n%s", r)
	}
}

// childBasics are the host variables a stdio server may inherit (PATH,
// HOME and similar basics); everything else must be configured explicitly.
var childBasics = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TEMP", "TMP",
	"LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SYSTEMROOT", "APPDATA", "USERPROFILE"}

// TestStdioEnvironmentIsolation: a stdio server sees its configured env and
// a few basics, never the host's other variables (API keys, secrets).
func TestStdioEnvironmentIsolation(t *testing.T) {
	t.Parallel()
	cfg := everythingConfig(t, obj{"FOO": "bar"})
	hostEnv := []string{
		"AGENTHOST_TEST_SECRET=leak",
		"E2E_HOST_ONLY_SECRET=leak-too",
		"OPENAI_API_KEY=sk-e2e-must-not-leak",
	}
	r := run(t, hostEnv, "--config", cfg, "call", "everything", "get-env", "--json")
	wantCode(t, r, 0)
	text := decodeStdout[callDoc](t, r).text()
	var childEnv map[string]string
	if err := json.Unmarshal([]byte(text), &childEnv); err != nil {
		t.Fatalf("get-env did not return a JSON environment: %v\n%s", err, r)
	}
	if childEnv["FOO"] != "bar" {
		t.Errorf("the configured FOO=bar is not visible to the server: %v", sortedKeys(childEnv))
	}
	if childEnv["PATH"] == "" {
		t.Errorf("the server got no PATH")
	}
	for _, name := range []string{"AGENTHOST_TEST_SECRET", "E2E_HOST_ONLY_SECRET", "OPENAI_API_KEY"} {
		if _, ok := childEnv[name]; ok {
			t.Errorf("the host's %s leaked into the server", name)
		}
	}
	for name := range childEnv {
		if name != "FOO" && !slices.Contains(childBasics, name) {
			t.Errorf("the server inherited %s, which is neither configured nor a basic", name)
		}
	}
	if strings.Contains(text, "leak") || strings.Contains(text, "sk-e2e") {
		t.Errorf("a host secret value is visible to the server")
	}
}
