package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPCommands: `mcp add` writes a stdio and an http server into the
// config file (keeping its comments), `mcp list` connects and reports each
// (the stdio one connected, the unreachable one failed), `mcp get` shows one
// with its env values masked, `mcp remove` takes one out, and an entry that
// would not load is not written.
func TestMCPCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{{"name": "echo", "inputSchema": obj{"type": "object"}}})
	cfg := writeFile(t, dir, "agenthost.yaml", []byte("# my servers\naudit:\n  path: "+filepath.Join(dir, "audit.jsonl")+"\n"))
	canary := newCanary(t, "env")

	r := run(t, nil, "--config", cfg, "mcp", "add", "-e", "TOKEN="+canary, "local", "--", testServerBin, "--tools", tools)
	wantCode(t, r, 0)
	r = run(t, nil, "--config", cfg, "mcp", "add", "--transport", "http", "-H", "Authorization: Bearer x", "remote", "http://127.0.0.1:1/mcp")
	wantCode(t, r, 0)
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), "# my servers") || !strings.Contains(string(data), "--tools") {
		t.Fatalf("the config after mcp add:\n%s", data)
	}
	r = run(t, nil, "--config", cfg, "mcp", "add", "local", "--", "other")
	wantCode(t, r, 2)
	r = run(t, nil, "--config", cfg, "mcp", "add", "--transport", "http", "bad", "ftp://x")
	wantCode(t, r, 2)
	if after, _ := os.ReadFile(cfg); string(after) != string(data) {
		t.Errorf("a refused add changed the file:\n%s", after)
	}

	r = run(t, nil, "--config", cfg, "mcp", "list")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "local: "+testServerBin+" --tools "+tools+" - ✓ Connected (1 tool)") ||
		!strings.Contains(r.stdout, "remote: http://127.0.0.1:1/mcp (http) - ✗ Failed to connect") {
		t.Errorf("mcp list:\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "mcp", "get", "local")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "Status: ✓ Connected") || !strings.Contains(r.stdout, "TOKEN=(set)") || strings.Contains(r.stdout+r.stderr, canary) {
		t.Errorf("mcp get:\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "mcp", "remove", "remote")
	wantCode(t, r, 0)
	r = run(t, nil, "--config", cfg, "mcp", "list")
	wantCode(t, r, 0)
	if strings.Contains(r.stdout, "remote") || !strings.Contains(r.stdout, "local:") {
		t.Errorf("mcp list after remove:\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "mcp", "remove", "remote")
	wantCode(t, r, 2)
}
