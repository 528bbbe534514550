//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config/internal/allowlist"
)

// managedTree is a folder an administrator owns (opt/mcp) and one a user
// owns (home), with the symlinks between them the tests need.
type managedTree struct{ root, server, sub, evil, userLink, userDirLink, adminLinkOut string }

func newManagedTree(t *testing.T) managedTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mt := managedTree{
		root:         root,
		server:       filepath.Join(root, "opt/mcp/bin/server"),
		sub:          filepath.Join(root, "opt/mcp/bin/sub/server"),
		evil:         filepath.Join(root, "home/evil"),
		userLink:     filepath.Join(root, "home/link"),
		userDirLink:  filepath.Join(root, "home/bin"),
		adminLinkOut: filepath.Join(root, "opt/mcp/bin/out"),
	}
	for _, p := range []string{mt.server, mt.sub, mt.evil} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+filepath.Base(p)+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{mt.userLink: mt.server, mt.userDirLink: filepath.Dir(mt.server), mt.adminLinkOut: mt.evil} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return mt
}

// TestManagedCommandIsTheFileThatRuns: a path pattern matches the cleaned,
// symlink-resolved path of the file the command names (as the host
// resolves it to start it: relative to cwd, a bare name in PATH), "*"
// never crosses a "/", and the file to execute is the form that matched.
func TestManagedCommandIsTheFileThatRuns(t *testing.T) {
	mt := newManagedTree(t)
	t.Setenv("PATH", filepath.Join(mt.root, "home")+string(os.PathListSeparator)+filepath.Dir(mt.server))
	m := &Managed{AllowedServers: []ServerPattern{{Command: filepath.Join(mt.root, "opt/mcp/bin/*")}}}
	tests := []struct {
		name    string
		srv     Server
		wantExe string // "" when refused
	}{
		{"a file in the folder", Server{Command: mt.server}, mt.server},
		{"out of the folder with ..", Server{Command: filepath.Join(mt.root, "opt/mcp/bin/../../../srv/evil")}, ""},
		{"back into the folder with ..", Server{Command: filepath.Join(mt.root, "opt/mcp/bin/sub/../server")}, mt.server},
		{"below the folder", Server{Command: mt.sub}, ""},
		{"a user's symlink to a file in the folder", Server{Command: mt.userLink}, mt.server},
		{"through a user's symlink to the folder", Server{Command: filepath.Join(mt.userDirLink, "server")}, mt.server},
		{"relative to its cwd", Server{Command: "./bin/server", Cwd: filepath.Join(mt.root, "opt/mcp")}, mt.server},
		{"relative to its cwd, out with ..", Server{Command: "./bin/../../../srv/evil", Cwd: filepath.Join(mt.root, "opt/mcp")}, ""},
		{"a bare name found in the folder through PATH", Server{Command: "server"}, mt.server},
		{"a bare name found elsewhere through PATH", Server{Command: "evil"}, ""},
		{"a user's file", Server{Command: mt.evil}, ""},
		// The administrator's own symlink: its path is in the folder,
		// and that path (whose folders the pattern names) is what runs.
		{"an administrator's symlink out of the folder", Server{Command: mt.adminLinkOut}, mt.adminLinkOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exe, ok, why := m.admitted(&tt.srv, resolveCommand(&tt.srv))
			if ok != (tt.wantExe != "") || exe != tt.wantExe {
				t.Fatalf("admitted = %v, %q (%s); want %q", ok, exe, why, tt.wantExe)
			}
			if !ok && why == "" {
				t.Fatal("refused without a reason")
			}
		})
	}
}

func TestManagedArgsAreCleanPaths(t *testing.T) {
	m := &Managed{AllowedServers: []ServerPattern{{Command: "python3", Args: []string{"/opt/mcp/*.py"}}}}
	tests := []struct {
		arg  string
		want bool
	}{
		{"/opt/mcp/server.py", true},
		{"/opt/mcp/../../srv/u/evil.py", false},
		{"/opt/mcp/sub/x.py", false},
		{"/opt/mcp//server.py", false},
		{"/opt/mcp/./server.py", false},
		{"server.py", false},
	}
	for _, tt := range tests {
		srv := Server{Command: "python3", Args: []string{tt.arg}}
		if _, ok, _ := m.admitted(&srv, allowlist.CommandFile{}); ok != tt.want {
			t.Errorf("python3 %s: admitted = %v, want %v", tt.arg, ok, tt.want)
		}
	}
}

// TestManagedEnv: a configuration sets for an admitted server only the
// variables its admitting entry names; PYTHONPATH, NODE_OPTIONS or
// LD_PRELOAD would run the user's code inside the admitted server.
func TestManagedEnv(t *testing.T) {
	m := &Managed{AllowedServers: []ServerPattern{
		{Command: "python3", Args: []string{"/opt/mcp/server.py"}, Env: []string{"MCP_TOKEN", "LOG_*"}},
		{Command: "node"},
	}}
	tests := []struct {
		name    string
		srv     Server
		refused string // a variable the refusal must name; "" when admitted
	}{
		{"no env", Server{Command: "python3", Args: []string{"/opt/mcp/server.py"}}, ""},
		{"listed env", Server{Command: "python3", Args: []string{"/opt/mcp/server.py"}, Env: map[string]string{"MCP_TOKEN": "canary-token-1", "LOG_LEVEL": "canary-level"}}, ""},
		{"PYTHONPATH", Server{Command: "python3", Args: []string{"/opt/mcp/server.py"}, Env: map[string]string{"MCP_TOKEN": "canary-token-2", "PYTHONPATH": "/srv/u/canary-site"}}, "PYTHONPATH"},
		{"LD_PRELOAD", Server{Command: "python3", Args: []string{"/opt/mcp/server.py"}, Env: map[string]string{"LD_PRELOAD": "/srv/u/canary.so"}}, "LD_PRELOAD"},
		{"an entry without env admits none", Server{Command: "node", Env: map[string]string{"NODE_OPTIONS": "--require /srv/u/canary.js"}}, "NODE_OPTIONS"},
		{"PATH too", Server{Command: "node", Env: map[string]string{"PATH": "/srv/u/canary-bin"}}, "PATH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok, why := m.admitted(&tt.srv, allowlist.CommandFile{})
			if ok != (tt.refused == "") {
				t.Fatalf("admitted = %v (%s)", ok, why)
			}
			if !ok && !strings.Contains(why, tt.refused) {
				t.Fatalf("the refusal %q does not name %s", why, tt.refused)
			}
			for _, v := range tt.srv.Env {
				if !ok && strings.Contains(why, v) {
					t.Fatalf("the refusal %q repeats an env value", why)
				}
			}
		})
	}
}

// TestManagedEnvRefusedAtLoad: the refusal is a configuration error of
// the whole configuration, as for a server that matches no entry.
func TestManagedEnvRefusedAtLoad(t *testing.T) {
	dir := t.TempDir()
	managed := filepath.Join(dir, "managed.yaml")
	if err := os.WriteFile(managed, []byte("allowedServers:\n  - {command: python3, args: [/opt/mcp/server.py], env: [MCP_TOKEN]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ManagedPolicyEnv, managed)
	cfg := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(cfg, []byte("mcpServers:\n  py:\n    command: python3\n    args: [/opt/mcp/server.py]\n    env: {PYTHONPATH: /srv/u/site}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(cfg)
	if err == nil || !strings.Contains(err.Error(), "mcpServers.py") || !strings.Contains(err.Error(), "PYTHONPATH") {
		t.Fatalf("Load: %v, want a refusal of mcpServers.py naming PYTHONPATH", err)
	}
	if err := os.WriteFile(cfg, []byte("mcpServers:\n  py:\n    command: python3\n    args: [/opt/mcp/server.py]\n    env: {MCP_TOKEN: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(cfg); err != nil {
		t.Fatalf("a listed variable: %v", err)
	}
}

func TestAdmitExecutable(t *testing.T) {
	mt := newManagedTree(t)
	c := &Config{File: "agenthost.yaml", Managed: &Managed{File: "managed.yaml", AllowedServers: []ServerPattern{{Command: filepath.Join(mt.root, "opt/mcp/bin/*")}}},
		MCPServers: map[string]*Server{"s": {Command: mt.userLink}}}
	if exe, err := c.AdmitExecutable("s", mt.userLink); err != nil || exe != mt.server {
		t.Fatalf("AdmitExecutable = %q, %v; want %q", exe, err, mt.server)
	}
	if err := os.Remove(mt.userLink); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(mt.evil, mt.userLink); err != nil {
		t.Fatal(err)
	}
	if exe, err := c.AdmitExecutable("s", mt.userLink); err == nil || !strings.Contains(err.Error(), "mcpServers.s: not allowed by the managed policy managed.yaml") {
		t.Fatalf("the link now points out: %q, %v; want a refusal", exe, err)
	}
	c.Managed = nil
	if exe, err := c.AdmitExecutable("s", mt.userLink); err != nil || exe != mt.userLink {
		t.Fatalf("without a policy: %q, %v; want the path unchanged", exe, err)
	}
}

// TestManagedLoadRefuses: configurations the managed allowlist used to
// admit (an unclean path, a folder below the admitted one, a loader
// variable) are refused when they are loaded.
func TestManagedLoadRefuses(t *testing.T) {
	mt := newManagedTree(t)
	managed := filepath.Join(mt.root, "managed.yaml")
	policy := "allowedServers:\n  - {command: '" + filepath.Join(mt.root, "opt/mcp/bin/*") + "'}\n  - {command: python3, args: [/opt/mcp/server.py]}\n"
	if err := os.WriteFile(managed, []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ManagedPolicyEnv, managed)
	tests := []struct {
		name, server string
		refused      bool
	}{
		{"admitted", "{command: '" + mt.server + "'}", false},
		{"out of the folder with ..", "{command: '" + filepath.Join(mt.root, "opt/mcp/bin") + "/../../../srv/evil'}", true},
		{"below the folder", "{command: '" + mt.sub + "'}", true},
		{"admitted through a user's symlink", "{command: '" + mt.userLink + "'}", false},
		{"an admitted interpreter with PYTHONPATH", "{command: python3, args: [/opt/mcp/server.py], env: {PYTHONPATH: /srv/site}}", true},
		{"an admitted interpreter with LD_PRELOAD", "{command: python3, args: [/opt/mcp/server.py], env: {LD_PRELOAD: /srv/x.so}}", true},
		{"an admitted file with NODE_OPTIONS", "{command: '" + mt.server + "', env: {NODE_OPTIONS: '--require /srv/x.js'}}", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "agenthost.yaml")
			if err := os.WriteFile(cfg, []byte("mcpServers:\n  s: "+tt.server+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(cfg)
			if refused := err != nil && strings.Contains(err.Error(), "mcpServers.s: not allowed by the managed policy"); refused != tt.refused {
				t.Fatalf("Load: %v; want refused %v", err, tt.refused)
			}
		})
	}
}

// TestManagedAssertionCommand: the jwt-bearer grant's assertionCommand is
// an executed file like a stdio server's command: under a managed
// allowlist it must match a command pattern (with its assertionArgs), a
// configuration whose command matches none is refused when it is loaded,
// naming the key, and AdmitAssertionCommand returns the matched form of
// the file (so a link the user owns runs the admitted file) or refuses.
func TestManagedAssertionCommand(t *testing.T) {
	mt := newManagedTree(t)
	isolateEnv(t)
	policy := "allowedServers:\n  - {command: '" + filepath.Join(mt.root, "opt/mcp/bin/*") + "'}\n  - {url: 'https://mcp.corp.example/*'}\n"
	t.Setenv(ManagedPolicyEnv, writeFile(t, mt.root, "managed.yaml", policy))
	server := func(command string) string {
		return "mcpServers:\n  api:\n    url: https://mcp.corp.example/mcp\n    oauth: {grant: jwt-bearer, clientId: c, assertionCommand: '" + command + "'}\n"
	}
	if _, err := Load(writeFile(t, mt.root, "ok.yaml", server(mt.userLink))); err != nil {
		t.Fatalf("an admitted assertionCommand (through a link to it): %v", err)
	}
	_, err := Load(writeFile(t, mt.root, "evil.yaml", server(mt.evil)))
	if err == nil || !strings.Contains(err.Error(), "mcpServers.api.oauth.assertionCommand: not allowed by the managed policy") {
		t.Fatalf("Load: %v, want a refusal of mcpServers.api.oauth.assertionCommand", err)
	}
	if strings.Contains(err.Error(), "home/evil") {
		t.Errorf("the error repeats the configured command: %v", err)
	}

	c := &Config{File: "agenthost.yaml", Managed: &Managed{File: "managed.yaml", AllowedServers: []ServerPattern{{Command: filepath.Join(mt.root, "opt/mcp/bin/*")}}},
		MCPServers: map[string]*Server{"api": {URL: "https://mcp.corp.example/mcp", OAuth: &OAuth{AssertionCommand: mt.userLink}}}}
	if exe, err := c.AdmitAssertionCommand("api", mt.userLink); err != nil || exe != mt.server {
		t.Fatalf("AdmitAssertionCommand = %q, %v; want %q", exe, err, mt.server)
	}
	if exe, err := c.AdmitAssertionCommand("api", mt.evil); err == nil || !strings.Contains(err.Error(), "mcpServers.api.oauth.assertionCommand") {
		t.Fatalf("a file outside the pattern: %q, %v; want a refusal", exe, err)
	}
	c.MCPServers["api"].OAuth.AssertionArgs = []string{"--extra"}
	c.Managed.AllowedServers[0].Args = []string{}
	if _, err := c.AdmitAssertionCommand("api", mt.userLink); err == nil {
		t.Fatal("arguments the entry does not admit were accepted")
	}
	c.Managed = nil
	if exe, err := c.AdmitAssertionCommand("api", mt.evil); err != nil || exe != mt.evil {
		t.Fatalf("without a policy: %q, %v; want the path unchanged", exe, err)
	}
}
