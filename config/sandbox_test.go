package config

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/agenthost/internal/childproc"
)

func TestSandboxValidation(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string
	}{
		{"mode and network", "sandbox: {mode: strict, network: lan}\n", []string{
			"cfg.yaml: sandbox.mode: must be enforce or off",
			"cfg.yaml: sandbox.network: must be none, loopback or allow",
		}},
		{"mechanism", "sandbox: {mechanism: firejail}\nmcpServers:\n  s: {command: x, sandbox: {mechanism: bubblewrap, network: loopback, connect: ['127.0.0.1:80']}}\n", []string{
			"cfg.yaml: sandbox.mechanism: must be landlock, bubblewrap or auto",
			"cfg.yaml: mcpServers.s.sandbox.mechanism: bubblewrap gives a server the whole network or none of it (network none or allow, without connect): network loopback and connect need landlock",
		}},
		{"connect", "sandbox: {network: allow, connect: ['example.com', 'h:0', 'h:70000']}\n", []string{
			"cfg.yaml: sandbox.connect[0]: want host:port, such as 127.0.0.1:5432",
			"cfg.yaml: sandbox.connect[1]: port must be between 1 and 65535",
			"cfg.yaml: sandbox.connect[2]: port must be between 1 and 65535",
		}},
		{"loopback hosts only", "sandbox: {network: loopback, connect: ['example.com:80', '127.0.0.2:80', '[::1]:80', 'localhost:80']}\n", []string{
			"cfg.yaml: sandbox.connect[0]: network loopback allows loopback hosts only (localhost, 127.0.0.0/8, ::1)",
		}},
		{"connect under none", "sandbox: {network: none, connect: ['127.0.0.1:80']}\n", []string{
			"cfg.yaml: sandbox.connect: does not apply under network none",
		}},
		{"loopback needs destinations", "sandbox: {mode: enforce}\nmcpServers:\n  s: {command: x, sandbox: {network: loopback}}\n", []string{
			"cfg.yaml: mcpServers.s.sandbox.connect: network loopback needs the host:port destinations (the kernel restricts TCP by port, not by address)",
		}},
		{"limits", "sandbox: {limits: {addressSpace: 10MiB, openFiles: 3, processes: -1, cpuSeconds: -2}}\n", []string{
			"cfg.yaml: sandbox.limits.addressSpace: must be at least 64MiB",
			"cfg.yaml: sandbox.limits.openFiles: must be at least 16",
			"cfg.yaml: sandbox.limits.processes: must not be negative",
			"cfg.yaml: sandbox.limits.cpuSeconds: must not be negative",
		}},
		{"bad size", "sandbox: {limits: {addressSpace: lots}}\n", []string{
			"cfg.yaml: sandbox.limits.addressSpace: want a size such as 512MiB or 4GiB",
		}},
		{"url server", "mcpServers:\n  s: {url: 'https://example.com/mcp', sandbox: {mode: enforce}}\n", []string{
			"cfg.yaml: mcpServers.s.sandbox: only applies to servers started with command",
		}},
		{"source", "sources:\n  vault: {plugin: ./p, sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, sandbox: {mode: enforce, network: loopback, filesystem: {read: ['']}}}\n", []string{
			"cfg.yaml: sources.vault.sandbox.filesystem.read[0]: must be a path",
			"cfg.yaml: sources.vault.sandbox.connect: network loopback needs the host:port destinations (the kernel restricts TCP by port, not by address)",
		}},
		{"hook", "hooks:\n  PreToolUse:\n    - hooks: [{type: command, command: x, sandbox: {mode: on, network: loopback}}]\n", []string{
			"cfg.yaml: hooks.PreToolUse[0].hooks[0].sandbox.mode: must be enforce or off",
		}},
		{"unknown key", "sandbox: {filesystem: {exec: [a]}}\n", []string{
			"cfg.yaml: sandbox.filesystem.exec: unknown key (valid keys: read, write)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "yaml", "cfg.yaml")
			requireLines(t, err, tc.want...)
			if got := len(errorLines(t, err)); got != len(tc.want) {
				t.Errorf("got %d problems, want %d:\n%v", got, len(tc.want), err)
			}
		})
	}
}

// TestServerSandbox: a server's block replaces the default's settings it
// names, and the configuration's folder is the base of relative paths.
func TestServerSandbox(t *testing.T) {
	isolateEnv(t)
	t.Setenv("DATA", "/srv/data")
	dir := t.TempDir()
	path := writeFile(t, dir, "agenthost.yaml", `
sandbox:
  mode: enforce
  filesystem: {read: [shared], write: ['${DATA}/out']}
  limits: {addressSpace: 4GiB, openFiles: 256}
mcpServers:
  plain: {command: a}
  wrapped: {command: d, sandbox: {mechanism: bubblewrap}}
  own:
    command: b
    cwd: work
    sandbox:
      network: loopback
      connect: ['127.0.0.1:5432', 'localhost:5432', '[::1]:6379']
      filesystem: {read: ['${DATA}/in']}
      limits: {openFiles: 64}
  off: {command: c, sandbox: {mode: off}}
sources:
  plain: {plugin: ./p, sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}
  vault:
    plugin: ./p
    sha256: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    sandbox: {mode: enforce, filesystem: {read: ['${DATA}/secrets', store]}}
`)
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := cfg.ServerSandbox("plain").Child("")
	if err != nil {
		t.Fatal(err)
	}
	want := &childproc.Sandbox{
		Read: []string{filepath.Join(dir, "shared")}, Write: []string{"/srv/data/out"},
		Network: childproc.NetworkNone, Limits: childproc.Limits{AddressSpace: 4 << 30, OpenFiles: 256},
	}
	if !sandboxEqual(plain, want) {
		t.Errorf("plain: %+v, want %+v", plain, want)
	}
	// A server's mechanism replaces the default's (landlock).
	if sb, err := cfg.ServerSandbox("wrapped").Child(""); err != nil || sb.Mechanism != childproc.MechanismBubblewrap || len(sb.Write) != 1 {
		t.Errorf("wrapped: %+v, %v; want the default's sandbox under bubblewrap", sb, err)
	}
	own, err := cfg.ServerSandbox("own").Child(cfg.MCPServers["own"].Cwd)
	if err != nil {
		t.Fatal(err)
	}
	want = &childproc.Sandbox{
		Read: []string{"/srv/data/in"}, Write: []string{"/srv/data/out", filepath.Join(dir, "work")},
		Network: childproc.NetworkLoopback, Ports: []uint16{5432, 6379},
		Limits: childproc.Limits{AddressSpace: 4 << 30, OpenFiles: 64},
	}
	if !sandboxEqual(own, want) {
		t.Errorf("own: %+v, want %+v", own, want)
	}
	// Sources: their own block only, never the servers' default.
	if sb, err := cfg.SourceSandbox("plain").Child(""); err != nil || sb != nil {
		t.Errorf("source without a block: %+v, %v; want no sandbox", sb, err)
	}
	vault, err := cfg.SourceSandbox("vault").Child("")
	if err != nil {
		t.Fatal(err)
	}
	want = &childproc.Sandbox{Read: []string{"/srv/data/secrets", filepath.Join(dir, "store")}, Write: []string{}, Network: childproc.NetworkNone}
	if !sandboxEqual(vault, want) {
		t.Errorf("vault: %+v, want %+v", vault, want)
	}
	if off, err := cfg.ServerSandbox("off").Child(""); err != nil || off != nil {
		t.Errorf("off: %+v, %v; want no sandbox", off, err)
	}
	// Nothing configured: off.
	if sb, err := (&Config{}).SourceSandbox("x").Child(""); err != nil || sb != nil {
		t.Errorf("source default: %+v, %v; want no sandbox", sb, err)
	}
	if sb, err := (&Config{}).ServerSandbox("x").Child(""); err != nil || sb != nil {
		t.Errorf("default: %+v, %v; want no sandbox", sb, err)
	}
}

func sandboxEqual(a, b *childproc.Sandbox) bool {
	return slices.Equal(a.Read, b.Read) && slices.Equal(a.Write, b.Write) && a.Network == b.Network &&
		slices.Equal(a.Ports, b.Ports) && a.Limits == b.Limits
}

// TestSandboxModeFromEnv: the top-level mode is a scalar setting, so the
// one-line opt-in also works from the environment.
func TestSandboxModeFromEnv(t *testing.T) {
	isolateEnv(t)
	t.Setenv("AGENTHOST_SANDBOX_MODE", "enforce")
	cfg, err := Load(writeFile(t, t.TempDir(), "agenthost.yaml", "mcpServers: {s: {command: x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.ServerSandbox("s").Enforced() {
		t.Fatal("AGENTHOST_SANDBOX_MODE=enforce did not enforce the sandbox")
	}
}

func TestStartsUnsandboxedStdio(t *testing.T) {
	enforce := &Sandbox{Mode: SandboxEnforce}
	for _, tc := range []struct {
		name    string
		servers map[string]*Server
		top     Sandbox
		server  string
		want    bool
	}{
		{name: "no servers"},
		{name: "a stdio server", servers: map[string]*Server{"a": {Command: "x"}}, want: true},
		{name: "stdio by its type", servers: map[string]*Server{"a": {Command: "x", Type: TransportStdio}}, want: true},
		{name: "http only", servers: map[string]*Server{"a": {URL: "http://127.0.0.1:1/mcp", Type: TransportHTTP}}},
		{name: "sse only", servers: map[string]*Server{"a": {URL: "http://127.0.0.1:1/sse", Type: TransportSSE}}},
		{name: "disabled", servers: map[string]*Server{"a": {Command: "x", Disabled: true}}},
		{name: "no command", servers: map[string]*Server{"a": {}}},
		{name: "nil entry", servers: map[string]*Server{"a": nil}},
		{name: "its own sandbox", servers: map[string]*Server{"a": {Command: "x", Sandbox: enforce}}},
		{name: "the top-level sandbox", servers: map[string]*Server{"a": {Command: "x"}}, top: Sandbox{Mode: SandboxEnforce}},
		{name: "out of the top-level sandbox", servers: map[string]*Server{"a": {Command: "x", Sandbox: &Sandbox{Mode: SandboxOff}}},
			top: Sandbox{Mode: SandboxEnforce}, want: true},
		{name: "the named one is http", servers: map[string]*Server{"a": {Command: "x"}, "b": {URL: "http://127.0.0.1:1/mcp", Type: TransportHTTP}},
			server: "b"},
		{name: "the named one is stdio", servers: map[string]*Server{"a": {URL: "http://127.0.0.1:1/mcp", Type: TransportHTTP}, "b": {Command: "x"}},
			server: "b", want: true},
		{name: "the named one is missing", servers: map[string]*Server{"a": {Command: "x"}}, server: "c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{MCPServers: tc.servers, Sandbox: tc.top}
			if got := cfg.StartsUnsandboxedStdio(tc.server); got != tc.want {
				t.Errorf("StartsUnsandboxedStdio(%q) = %v, want %v", tc.server, got, tc.want)
			}
		})
	}
}
