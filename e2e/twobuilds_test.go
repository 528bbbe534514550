package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lone copies the lean build into a folder of its own, with the file
// named agenthost-full beside it when full is not "" (copied from full).
func lone(t *testing.T, full string) string {
	t.Helper()
	dir := t.TempDir()
	cp := func(from, to string) {
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cp(agenthostBin, exe("agenthost"))
	if full != "" {
		cp(full, exe("agenthost-full"))
	}
	return filepath.Join(dir, exe("agenthost"))
}

// runBin runs bin with args as run does agenthost.
func runBin(t *testing.T, bin string, args ...string) result {
	t.Helper()
	return runProgram(t, bin, defaultRunTimeout, nil, nil, args...)
}

// The lean build serves a command line that uses none of the full
// build's parts on its own: with no agenthost-full beside it, tools and
// call work.
func TestLeanServesOnItsOwn(t *testing.T) {
	bin := lone(t, "")
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "ping", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "pong"}}})
	cfg := writeConfig(t, obj{"mcpServers": obj{"srv": stdioServer(tools, "")}})
	r := runBin(t, bin, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"ping"`) {
		t.Errorf("tools lists no tool ping:\n%s", r)
	}
	r = runBin(t, bin, "--config", cfg, "call", "srv", "ping")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "pong") {
		t.Errorf("call printed no pong:\n%s", r)
	}
}

// A command line that needs the full build, with none beside the lean
// one, exits 2 saying what it needs and how to install both builds,
// having printed nothing else; with another executable in its place, it
// is refused and not run.
func TestLeanWithoutTheFullBuild(t *testing.T) {
	telemetry := writeConfig(t, obj{"observability": obj{"enabled": true, "endpoint": "http://127.0.0.1:1"}})
	for _, tc := range []struct {
		name string
		args []string
		what string
	}{
		{"serve", []string{"serve", "--listen", "127.0.0.1:0"}, "agenthost serve"},
		{"sessions", []string{"sessions", "list"}, "agenthost sessions"},
		{"a saved run", []string{"run", "--save", "hi"}, "saved sessions"},
		{"telemetry", []string{"--config", telemetry, "tools"}, "OpenTelemetry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, beside := range []struct {
				full, says string
			}{
				{"", "is not beside this executable"},
				{testServerBin, "built from another version"},
			} {
				r := runBin(t, lone(t, beside.full), tc.args...)
				wantCode(t, r, 2)
				for _, want := range []string{tc.what, beside.says, "go install github.com/agenthost/agenthost/cmd/...@VERSION"} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("stderr does not say %q:\n%s", want, r)
					}
				}
				if r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
					t.Errorf("printed more than the one line:\n%s", r)
				}
			}
		})
	}
}

// With the full build beside it, the lean one hands a command line over
// whole: serve's --help is the full build's.
func TestLeanHandsOverToTheFullBuild(t *testing.T) {
	full := filepath.Join(filepath.Dir(agenthostBin), exe("agenthost-full"))
	r := runBin(t, lone(t, full), "serve", "--help")
	wantCode(t, r, 0)
	direct := runBin(t, full, "serve", "--help")
	if r.stdout != direct.stdout || !strings.Contains(r.stdout, "--listen") {
		t.Errorf("serve --help through the lean build:\n%s\ndirectly:\n%s", r, direct)
	}
}
