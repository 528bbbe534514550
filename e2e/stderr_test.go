package e2e

import (
	"strings"
	"testing"
)

// TestFailedServerShowsItsStderr: a stdio server that fails to start shows
// the last lines of its stderr in servers, tools and a call's error, with
// the values of its configured env masked.
func TestFailedServerShowsItsStderr(t *testing.T) {
	t.Parallel()
	canary := newCanary(t, "stderr-env")
	cfg := writeConfig(t, obj{"mcpServers": obj{
		"gh": obj{
			"command": "sh",
			"args":    []string{"-c", `echo "starting with key $API_KEY" >&2; echo "GITHUB_TOKEN is not set" >&2; exit 1`},
			"env":     obj{"API_KEY": canary},
		},
	}})
	for _, args := range [][]string{{"servers"}, {"tools"}, {"call", "gh", "anything"}} {
		r := run(t, nil, append([]string{"--config", cfg}, args...)...)
		if r.code == 0 && args[0] != "tools" {
			t.Errorf("%v: exit 0 for a server that cannot start\n%s", args, r)
		}
		out := r.stdout + r.stderr
		if !strings.Contains(out, "GITHUB_TOKEN is not set") {
			t.Errorf("%v: the server's stderr is not shown\n%s", args, r)
		}
		if strings.Contains(out, canary) || !strings.Contains(out, "starting with key [REDACTED]") {
			t.Errorf("%v: the env value is not masked in the stderr shown\n%s", args, r)
		}
	}
}
