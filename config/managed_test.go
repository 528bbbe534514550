package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config/internal/allowlist"
)

func TestServerAdmission(t *testing.T) {
	m := &Managed{File: "managed.yaml", AllowedServers: []ServerPattern{
		{Command: "/opt/mcp/bin/*"},
		{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-*"}},
		{URL: "https://*.corp.example/*"},
	}}
	tests := []struct {
		name string
		srv  Server
		want bool
	}{
		{"command under the allowed folder", Server{Command: "/opt/mcp/bin/orders"}, true},
		{"command elsewhere", Server{Command: "/usr/bin/evil"}, false},
		{"npx with the allowed package", Server{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem"}}, true},
		{"npx with another package", Server{Command: "npx", Args: []string{"-y", "evil-server"}}, false},
		{"npx with an extra argument", Server{Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "/"}}, false},
		{"allowed url", Server{URL: "https://tools.corp.example/mcp"}, true},
		{"other url", Server{URL: "https://tools.example/mcp"}, false},
		{"url with user information", Server{URL: "https://x@tools.corp.example/mcp"}, false},
	}
	for _, tt := range tests {
		if _, got, why := m.admitted(&tt.srv, resolveCommand(&tt.srv)); got != tt.want || (!got && why == "") {
			t.Errorf("%s: admitted = %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
	if _, ok, _ := (&Managed{}).admitted(&Server{Command: "anything"}, allowlist.CommandFile{}); !ok {
		t.Error("no allowedServers key: a server was refused")
	}
	if _, ok, _ := (&Managed{AllowedServers: []ServerPattern{}}).admitted(&Server{Command: "anything"}, allowlist.CommandFile{}); ok {
		t.Error("allowedServers: [] admitted a server")
	}
}

func TestParseManaged(t *testing.T) {
	good := `
approvals:
  unclassified: strict
  noMatch: ask
  maxTrustLevel: 3
  rules:
    - {id: no-drop, when: {tool: ["drop_*"]}, decide: deny, message: "no drops"}
    - {id: sql, when: {tool: [execute_sql], expr: 'args.query.startsWith("select")'}, decide: allow}
allowedServers:
  - {command: "/opt/mcp/*"}
  - {url: "https://*.corp.example/*"}
`
	m, err := ParseManaged([]byte(good), "yaml", "managed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m.File != "managed.yaml" || len(m.AllowedServers) != 2 || len(m.Approvals.Rules) != 2 || m.Approvals.MaxTrustLevel != 3 {
		t.Errorf("parsed %+v", m)
	}
	empty, err := ParseManaged([]byte("allowedServers: []\n"), "yaml", "m.yaml")
	if err != nil || empty.AllowedServers == nil {
		t.Errorf("allowedServers: [] parsed as %#v (%v), want an empty, non-nil list", empty, err)
	}

	bad := []struct{ doc, want string }{
		{"allowedServers: [{command: a, url: 'https://x/'}]", "m.yaml: allowedServers[0]: set exactly one of command or url"},
		{"allowedServers: [{}]", "m.yaml: allowedServers[0]: set exactly one of command or url"},
		{"allowedServers: [{url: 'x.example'}]", "m.yaml: allowedServers[0].url: want SCHEME://HOST"},
		{"allowedServers: [{command: '[a'}]", "m.yaml: allowedServers[0].command: invalid glob"},
		{"allowedServers: [{url: 'https://x/', args: [a]}]", "m.yaml: allowedServers[0].args: only applies"},
		{"allowedServers: [{url: 'https://x/', env: [A]}]", "m.yaml: allowedServers[0].env: only applies"},
		{"allowedServers: [{command: x, env: ['A=B']}]", "m.yaml: allowedServers[0].env[0]: must be an environment variable name"},
		{"approvals: {rules: [{id: x, when: {expr: 'tool.nmae'}, decide: deny}]}", `m.yaml: approvals.rules[0].when.expr: rule "x"`},
		{"approvals: {maxTrustLevel: 9}", "m.yaml: approvals.maxTrustLevel: must be from 1 to 5"},
		{"allowedservers: [{command: a}]\nmcpServers: {}", "m.yaml: mcpServers: unknown"},
	}
	for _, b := range bad {
		_, err := ParseManaged([]byte(b.doc), "yaml", "m.yaml")
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: error %v, want %q", b.doc, err, b.want)
		}
	}
}

// Load applies the managed policy: a server the user's config adds that the
// policy does not allow is a configuration error naming the server and the
// managed file; a disabled one is not checked.
func TestLoadRefusesServersTheManagedPolicyForbids(t *testing.T) {
	isolateEnv(t)
	dir := t.TempDir()
	managed := writeFile(t, dir, "managed.yaml", "allowedServers:\n  - {command: \"/opt/mcp/*\"}\n  - {url: \"https://*.corp.example/*\"}\n")
	t.Setenv(ManagedPolicyEnv, managed)

	ok := writeFile(t, dir, "ok.yaml", "mcpServers:\n  orders: {command: /opt/mcp/orders}\n  remote: {url: https://mcp.corp.example/mcp}\n  old: {command: /usr/bin/old, disabled: true}\n")
	cfg, err := Load(ok)
	if err != nil {
		t.Fatalf("allowed servers refused: %v", err)
	}
	if cfg.Managed == nil || cfg.Managed.File != managed {
		t.Errorf("Managed = %+v, want the policy from %s", cfg.Managed, managed)
	}

	user := writeFile(t, dir, "agenthost.yaml", "mcpServers:\n  orders: {command: /opt/mcp/orders}\n  evil: {command: ./bin/evil}\n  web: {url: https://evil.example/mcp}\n")
	_, err = Load(user)
	lines := errorLines(t, err)
	if len(lines) != 2 {
		t.Fatalf("errors %q, want two", lines)
	}
	for i, name := range []string{"evil", "web"} {
		want := user + ": mcpServers." + name + ": not allowed by the managed policy " + managed
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("error %q, want it to start with %q", lines[i], want)
		}
	}
	if strings.Contains(err.Error(), "evil.example") || strings.Contains(err.Error(), "bin/evil") {
		t.Errorf("the error repeats a configured value: %v", err)
	}

	// A relative command is matched as the absolute path it starts.
	t.Setenv(ManagedPolicyEnv, writeFile(t, dir, "m2.yaml", "allowedServers: [{command: \""+filepath.Join(dir, "bin")+"/*\"}]\n"))
	if _, err := Load(user + ""); err == nil || strings.Contains(err.Error(), "mcpServers.evil") {
		t.Errorf("relative command: %v, want only orders and web refused", err)
	}
}

func TestLoadManagedFile(t *testing.T) {
	dir := t.TempDir()
	if m, err := LoadManaged(filepath.Join(dir, "absent.yaml")); m != nil || err != nil {
		t.Errorf("absent file: %v, %v; want no policy and no error", m, err)
	}
	writeFile(t, dir, "d.yaml/x", "")
	if _, err := LoadManaged(filepath.Join(dir, "d.yaml")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v, want an error (a managed policy that exists is never skipped)", err)
	}
	if _, err := LoadManaged(writeFile(t, dir, "bad.yaml", "approvals: [")); err == nil {
		t.Error("a broken file: no error")
	}
	if _, err := LoadManaged(filepath.Join(dir, "m.ini")); err == nil {
		t.Error("an unknown extension: no error")
	}
	isolateEnv(t)
	t.Setenv(ManagedPolicyEnv, "/x/y.yaml")
	if got := ManagedPolicyPath(); got != "/x/y.yaml" {
		t.Errorf("ManagedPolicyPath = %q", got)
	}
	t.Setenv(ManagedPolicyEnv, "")
	if got := ManagedPolicyPath(); got != DefaultManagedPolicyPath {
		t.Errorf("ManagedPolicyPath = %q, want %q", got, DefaultManagedPolicyPath)
	}
}
