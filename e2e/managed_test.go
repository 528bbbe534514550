package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/internal/glob"
)

// writeManaged writes an administrator's managed policy and returns the
// environment that points agenthost at it.
func writeManaged(t *testing.T, policy obj) (path string, env []string) {
	t.Helper()
	data, err := yaml.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	path = writeFile(t, t.TempDir(), "managed.yaml", data)
	return path, []string{"AGENTHOST_MANAGED_POLICY=" + path}
}

// A managed policy whose allowedServers do not cover a server the user's
// config adds refuses the configuration (exit 2), naming the server and
// the managed file, before the server is started.
func TestManagedPolicyForbidsServer(t *testing.T) {
	cfg, record := exprShop(t, readmeExprRules)
	managed, env := writeManaged(t, obj{"allowedServers": []obj{
		{"command": "/opt/approved-mcp/*"},
		{"url": "https://*.corp.example/*"},
	}})

	r := run(t, env, "--config", cfg, "call", "db", "execute_sql", "--args", `{"query":"select 1"}`)
	wantCode(t, r, 2)
	want := cfg + ": mcpServers.db: not allowed by the managed policy " + managed
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q\n%s", want, r)
	}
	if recs := readRecord(t, record); len(recs) > 0 {
		t.Errorf("the forbidden server was started: %v", methods(recs))
	}
	r = run(t, env, "--config", cfg, "servers", "--json")
	wantCode(t, r, 2)

	// An ad-hoc server is checked too.
	r = run(t, env, "call", "--url", "http://127.0.0.1:9/mcp", "echo")
	wantCode(t, r, 2)
	if !strings.Contains(r.stderr, "mcpServers.url: not allowed by the managed policy "+managed) {
		t.Errorf("call --url: stderr lacks the refusal\n%s", r)
	}

	// Without the managed policy the same config runs.
	r = run(t, nil, "--config", cfg, "call", "db", "execute_sql", "--args", `{"query":"select 1"}`)
	wantCode(t, r, 0)
}

// Managed rules apply whatever the user's config says: the user's config
// allows everything, the managed policy denies a call by its arguments and
// caps the trust level; the user cannot relax either.
func TestManagedRulesApplyOverUserConfig(t *testing.T) {
	cfg, record := exprShop(t, []obj{{"id": "everything", "when": obj{"tool": []string{"*"}}, "decide": "allow"}})
	_, env := writeManaged(t, obj{
		"allowedServers": []obj{{"command": glob.Escape(filepath.Dir(testServerBin)) + "/*"}},
		"approvals": obj{
			"rules": []obj{{"id": "no-writes", "when": obj{"tool": []string{"execute_sql"},
				"expr": `!args.query.trim().lowerAscii().startsWith("select")`}, "decide": "deny",
				"message": "the administrator allows read-only SQL"}},
			"maxTrustLevel": 2,
		},
	})

	r := run(t, env, "--config", cfg, "call", "db", "execute_sql", "--args", `{"query":"select 1"}`)
	wantCode(t, r, 0)
	calls := len(withMethod(readRecord(t, record), "tools/call"))

	r = run(t, env, "--config", cfg, "call", "db", "execute_sql", "--args", `{"query":"drop table orders"}`, "--json")
	msg := wantCallError(t, r, 3, "denied")
	if !strings.Contains(msg, "managed/no-writes") {
		t.Errorf("the refusal does not name the managed rule: %q", msg)
	}
	if got := len(withMethod(readRecord(t, record), "tools/call")); got != calls {
		t.Errorf("the denied call reached the server")
	}

	r = run(t, env, "--config", cfg, "policy", "explain", "db", "execute_sql", "--args", `{"query":"drop table orders"}`, "--trust", "5")
	wantCode(t, r, 3)
	for _, want := range []string{"managed/no-writes: !args.query", "=> true", "capped at 2 by the managed policy", "rules:      managed/no-writes (deny), everything (allow)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q\n%s", want, r)
		}
	}
}
