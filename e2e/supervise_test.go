//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSmallSupervisorStartsTheServers: with agenthost-supervise of the
// same build beside it, the CLI's stdio server is started by that small
// supervisor (the server's parent runs that file); with none beside it, or
// with another program by that name, by the CLI's own binary, and the
// server works either way (cmdutil.Factory.childSupervisor); the
// supervisor is named agenthost-sup in ps either way (proctree.Name).
func TestSmallSupervisorStartsTheServers(t *testing.T) {
	t.Parallel()
	small := filepath.Join(filepath.Dir(agenthostBin), exe("agenthost-supervise"))
	for _, tc := range []struct {
		name   string
		beside string // copied in as agenthost-supervise ("": none)
		parent string // the server's parent: "agenthost" or "agenthost-supervise"
	}{
		{"the small supervisor beside", small, "agenthost-supervise"},
		{"none beside", "", "agenthost"},
		{"another program by its name", testServerBin, "agenthost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin := lone(t, "")
			dir := filepath.Dir(bin)
			if tc.beside != "" {
				data, err := os.ReadFile(tc.beside)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, exe("agenthost-supervise")), data, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "ping", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "pong"}}})
			parentFile := filepath.Join(t.TempDir(), "parent")
			server := obj{"command": "/bin/sh", "args": []string{"-c", `{ readlink /proc/$PPID/exe; cat /proc/$PPID/comm; } > "$0"; exec "$1" --tools "$2"`, parentFile, testServerBin, tools}}
			cfg := writeConfig(t, obj{"mcpServers": obj{"srv": server}})
			r := runBin(t, bin, "--config", cfg, "call", "srv", "ping")
			wantCode(t, r, 0)
			if !strings.Contains(r.stdout, "pong") {
				t.Errorf("call printed no pong:\n%s", r)
			}
			got, err := os.ReadFile(parentFile)
			if err != nil {
				t.Fatalf("the server did not say who started it: %v\n%s", err, r)
			}
			exePath, comm, _ := strings.Cut(strings.TrimSpace(string(got)), "\n")
			if want := filepath.Join(dir, exe(tc.parent)); exePath != want {
				t.Errorf("the server's parent runs %s, want %s", exePath, want)
			}
			// Whichever program it is, the supervisor names itself so
			// (not "6", after the descriptor it was executed through).
			if comm != "agenthost-sup" {
				t.Errorf("the server's parent is named %q, want agenthost-sup", comm)
			}
		})
	}
}
