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

// TestUnboundSecureServerIsExplained: a server that supports secure
// parameters while no binding names it is not declared the extension; the
// catalog says so, and why its secure tools are not offered.
func TestUnboundSecureServerIsExplained(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "query", "inputSchema": obj{"type": "object", "properties": obj{"q": obj{"type": "string"}}},
		"secureInputSchema": obj{"type": "object", "properties": obj{"tenant": obj{"type": "string"}}, "required": []string{"tenant"}},
	}})
	cfg := writeConfig(t, obj{"mcpServers": obj{"db": stdioServer(tools, "", "--extension", secureExt)}})
	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	doc := decodeStdout[struct {
		Servers []struct {
			Warnings []string   `json:"warnings"`
			Tools    []toolInfo `json:"tools"`
		} `json:"servers"`
	}](t, r)
	if len(doc.Servers) != 1 || len(doc.Servers[0].Warnings) != 1 || !strings.Contains(doc.Servers[0].Warnings[0], `no binding names server "db"`) {
		t.Fatalf("no warning that the server's secure parameters are unbound\n%s", r)
	}
	// The server lists its secure tool only to clients that declare the
	// extension; if it lists it anyway, the exclusion names the fix.
	for _, tl := range doc.Servers[0].Tools {
		if tl.Status != "excluded" || !strings.Contains(reasonOf(tl), "add a bindings entry") {
			t.Errorf("the secure tool's reason does not name the fix\n%s", r)
		}
	}
	r = run(t, nil, "--config", cfg, "call", "db", "query", "--args", `{"q":"x"}`)
	if r.code != 6 || !strings.Contains(r.stderr, "no binding names server") {
		t.Errorf("call does not say why the tool is missing\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "tools")
	if !strings.Contains(r.stdout, "warning: the server supports secure parameters") {
		t.Errorf("tools text output lacks the warning\n%s", r)
	}
}
