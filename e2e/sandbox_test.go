//go:build linux

package e2e

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/childproc"
)

// sandboxTools are the test server's probes (host/mcptest, x-test probe)
// and a tool that crashes the server.
const sandboxTools = `[
 {"name": "dial", "inputSchema": {"type": "object", "properties": {"addr": {"type": "string"}}}, "x-test": {"probe": "dial"}},
 {"name": "spawn", "inputSchema": {"type": "object", "properties": {"count": {"type": "number"}}}, "x-test": {"probe": "spawn"}},
 {"name": "allocate", "inputSchema": {"type": "object", "properties": {"mib": {"type": "number"}}}, "x-test": {"probe": "allocate"}},
 {"name": "crash", "inputSchema": {"type": "object"}, "x-test": {"die": true}}]`

// sandboxReport is the sandbox of one server in `servers --json`.
type sandboxReport struct {
	Servers []struct {
		Name    string                 `json:"name"`
		Status  string                 `json:"status"`
		Error   *string                `json:"error"`
		Sandbox *childproc.Enforcement `json:"sandbox"`
	} `json:"servers"`
}

// loopbackListener accepts and closes TCP connections on 127.0.0.1 until
// the test ends.
func loopbackListener(t *testing.T) (addr string, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	return ln.Addr().String(), ln.Addr().(*net.TCPAddr).Port
}

// TestSandboxFilesystemPeer runs the npm reference server-filesystem with
// the whole (temporary) home folder as its allowed folder, but sandboxed to
// one folder in it: the kernel refuses the home folder's SSH key (a canary)
// and writes outside the granted folder, whatever the server itself allows.
func TestSandboxFilesystemPeer(t *testing.T) {
	t.Parallel()
	node, script := ftPeer(t, "server-filesystem")
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const canary = "CANARY-ssh-private-key-4b1d"
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := writeFile(t, filepath.Join(home, ".ssh"), "id_ed25519", []byte(canary+"\n"))
	granted := filepath.Join(home, "work")
	if err := os.Mkdir(granted, 0o755); err != nil {
		t.Fatal(err)
	}
	notes := writeFile(t, granted, "notes.txt", []byte("granted folder says hello\n"))
	cfg := writeConfig(t, obj{
		"sandbox": obj{"mode": "enforce"},
		"mcpServers": obj{"fs": obj{"command": node, "args": []string{script, home},
			"sandbox": obj{"filesystem": obj{"read": []string{"${HOME}/work"}, "write": []string{"${HOME}/work"}}}}},
	})
	env := []string{"HOME=" + home}

	r := run(t, env, "--config", cfg, "servers", "--json")
	wantCode(t, r, 0)
	rep := decodeStdout[sandboxReport](t, r)
	if len(rep.Servers) != 1 || rep.Servers[0].Sandbox == nil {
		t.Fatalf("servers --json has no sandbox report\n%s", r)
	}
	if sb := rep.Servers[0].Sandbox; sb.Mode != "enforce" || !strings.Contains(sb.Mechanism, "landlock") || sb.LandlockABI < 1 || sb.Network != "none" {
		t.Errorf("sandbox report %+v: want enforce, landlock, its ABI, network none", *sb)
	}
	r = run(t, env, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"sandbox": {`) || !strings.Contains(r.stdout, `"landlockABI"`) {
		t.Errorf("tools --json reports no sandbox\n%s", r)
	}

	read := func(path string) result {
		return run(t, env, "--config", cfg, "call", "fs", "read_text_file", "--args", mustJSON(obj{"path": path}), "--json")
	}
	r = read(notes)
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "granted folder says hello") {
		t.Errorf("reading the granted folder failed\n%s", r)
	}
	r = read(key)
	if strings.Contains(r.stdout+r.stderr, canary) {
		t.Fatalf("the sandboxed server read the SSH key\n%s", r)
	}
	if !strings.Contains(r.stdout, "EACCES") {
		t.Errorf("reading the SSH key: want the kernel's EACCES\n%s", r)
	}

	write := func(path string) result {
		return run(t, env, "--config", cfg, "call", "fs", "write_file", "--args", mustJSON(obj{"path": path, "content": "written"}), "--approve", "auto", "--json")
	}
	outside := filepath.Join(home, "outside.txt")
	r = write(outside)
	if _, err := os.Stat(outside); err == nil {
		t.Fatalf("the sandboxed server wrote outside its write folders\n%s", r)
	}
	if !strings.Contains(r.stdout, "EACCES") {
		t.Errorf("writing outside: want the kernel's EACCES\n%s", r)
	}
	// Over a file that exists: for a new file the server lists the
	// parents up to its allowed folder (the home folder, not granted).
	inside := notes
	r = write(inside)
	wantCode(t, r, 0)
	if got, err := os.ReadFile(inside); err != nil || string(got) != "written" {
		t.Errorf("writing in the granted folder: %q, %v\n%s", got, err, r)
	}
}

// sandboxedServer is a config with the test server under the given
// sandbox block.
func sandboxedServer(t *testing.T, sandbox obj) (cfg, record string) {
	t.Helper()
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", []byte(sandboxTools))
	record = filepath.Join(dir, "record.jsonl")
	srv := stdioServer(tools, record)
	// The record file is the server's to write.
	sandbox["filesystem"] = obj{"write": []string{dir}}
	srv["sandbox"] = sandbox
	return writeConfig(t, obj{"sandbox": obj{"mode": "enforce"}, "mcpServers": obj{"t": srv}}), record
}

// TestSandboxNetwork: a server that dials a loopback listener is refused
// under network none and connects under loopback with that port; under
// loopback another port is refused (the kernel enforces ports).
func TestSandboxNetwork(t *testing.T) {
	t.Parallel()
	addr, port := loopbackListener(t)
	tests := []struct {
		name    string
		sandbox obj
		ok      bool
	}{
		{"none", obj{"network": "none"}, false},
		{"loopback with the port", obj{"network": "loopback", "connect": []string{"127.0.0.1:" + strconv.Itoa(port)}}, true},
		{"loopback with another port", obj{"network": "loopback", "connect": []string{"127.0.0.1:" + strconv.Itoa(port+1)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, _ := sandboxedServer(t, tt.sandbox)
			r := run(t, nil, "--config", cfg, "call", "t", "dial", "--args", mustJSON(obj{"addr": addr}), "--json")
			if tt.ok {
				wantCode(t, r, 0)
			} else {
				wantCode(t, r, 5) // a tool error
			}
			doc := decodeStdout[callDoc](t, r)
			if tt.ok && (doc.IsError || doc.text() != "connected") {
				t.Fatalf("dial under %v: want connected\n%s", tt.sandbox, r)
			}
			if !tt.ok && (!doc.IsError || !strings.Contains(doc.text(), "permission denied")) {
				t.Fatalf("dial under %v: want the kernel's refusal\n%s", tt.sandbox, r)
			}
		})
	}
}

// TestSandboxLimits: a burst of processes stops at the process limit (a
// bounded bomb: were the limit not enforced, 300 sleeps would still not
// harm the machine; as root the limit is a pids cgroup, which counts the
// server's threads too) and the host can still start processes; a memory hog
// dies at the address-space limit, and the host reports the lost server
// instead of dying itself.
func TestSandboxLimits(t *testing.T) {
	t.Parallel()
	t.Run("processes", func(t *testing.T) {
		t.Parallel()
		cfg, _ := sandboxedServer(t, obj{"limits": obj{"processes": 40}})
		r := run(t, nil, "--config", cfg, "call", "t", "spawn", "--args", mustJSON(obj{"count": 300}), "--json")
		wantCode(t, r, 5) // a tool error
		doc := decodeStdout[callDoc](t, r)
		if !doc.IsError || !strings.Contains(doc.text(), "of 300: ") {
			t.Fatalf("300 processes under a limit of 40: want the fork refused part way\n%s", r)
		}
		started, err := strconv.Atoi(strings.Fields(strings.TrimPrefix(doc.text(), "started "))[0])
		if err != nil || started >= 40 {
			t.Fatalf("started %q processes under a limit of 40\n%s", doc.text(), r)
		}
		if err := exec.Command("true").Run(); err != nil {
			t.Fatalf("the host cannot start a process after the burst: %v", err)
		}
	})
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		// Go reserves about 2 GiB of address space up front.
		cfg, _ := sandboxedServer(t, obj{"limits": obj{"addressSpace": "3GiB"}})
		r := run(t, nil, "--config", cfg, "call", "t", "allocate", "--args", mustJSON(obj{"mib": 64}), "--json")
		wantCode(t, r, 0)
		r = run(t, nil, "--config", cfg, "call", "t", "allocate", "--args", mustJSON(obj{"mib": 4096}), "--json")
		if r.code == 0 || strings.Contains(r.stdout, "allocated") {
			t.Fatalf("4 GiB under a 3 GiB address-space limit: want the server stopped\n%s", r)
		}
		if !strings.Contains(r.stdout, `"error"`) {
			t.Fatalf("the host did not report the lost server\n%s", r)
		}
	})
}

// TestSandboxRestartedSandboxed: a sandboxed server that crashes is
// started again by the next call, under the same sandbox. It uses the Go
// library with the e2e agenthost binary as the supervisor.
func TestSandboxRestartedSandboxed(t *testing.T) {
	t.Parallel()
	addr, _ := loopbackListener(t)
	tools := writeFile(t, t.TempDir(), "tools.json", []byte(sandboxTools))
	cfg := &config.Config{
		Sandbox:    config.Sandbox{Mode: config.SandboxEnforce},
		MCPServers: map[string]*config.Server{"t": {Command: testServerBin, Args: []string{"--tools", tools}}},
		Approvals:  approvalsAllowAll(t),
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := host.New(host.Options{Config: cfg, ChildSupervisor: &childproc.Supervisor{Path: agenthostBin}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := h.NewSession(host.SessionOptions{})
	dial := func() string {
		t.Helper()
		res, err := s.CallTool(t.Context(), "t", "dial", json.RawMessage(mustJSON(obj{"addr": addr})))
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	if out := dial(); !strings.Contains(out, "permission denied") {
		t.Fatalf("first dial under network none: %s", out)
	}
	if _, err := s.CallTool(t.Context(), "t", "crash", json.RawMessage(`{}`)); err == nil {
		t.Fatal("the crash call succeeded")
	}
	out := dial()
	if !strings.Contains(out, "permission denied") {
		t.Fatalf("dial after the restart: %s (want the same sandbox's refusal)", out)
	}
	for _, snap := range h.Servers() {
		if snap.Sandbox == nil || snap.Sandbox.Mode != "enforce" {
			t.Errorf("after the restart the server reports sandbox %+v", snap.Sandbox)
		}
	}
}

// approvalsAllowAll is allowAll as a typed approvals section.
func approvalsAllowAll(t *testing.T) (a rules.Config) {
	t.Helper()
	b, err := json.Marshal(allowAll())
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestSandboxUnavailableRefuses: on a kernel without Landlock (simulated)
// an enforced sandbox means the server does not start, with what is
// missing and the setting that relaxes it.
func TestSandboxUnavailableRefuses(t *testing.T) {
	t.Parallel()
	cfg, record := sandboxedServer(t, obj{})
	r := run(t, []string{"AGENTHOST_TEST_LANDLOCK_ABI=0"}, "--config", cfg, "servers", "--json")
	wantCode(t, r, 6)
	rep := decodeStdout[sandboxReport](t, r)
	if len(rep.Servers) != 1 || rep.Servers[0].Status != "error" || rep.Servers[0].Error == nil {
		t.Fatalf("want the server in error\n%s", r)
	}
	if msg := *rep.Servers[0].Error; !strings.Contains(msg, "no Landlock") || !strings.Contains(msg, "sandbox.mode: off") {
		t.Errorf("error %q: want what is missing and the setting that relaxes it", msg)
	}
	if sb := rep.Servers[0].Sandbox; sb == nil || sb.LandlockABI != 0 || sb.Mechanism != "none" {
		t.Errorf("sandbox report %+v: want ABI 0, mechanism none", sb)
	}
	if _, err := os.Stat(record); err == nil {
		t.Fatal("the server started although its sandbox could not be applied")
	}
}

// TestSandboxBubblewrap: under sandbox.mechanism bubblewrap the server runs
// inside bwrap: it cannot read a canary under the (temporary) home folder,
// reads what the sandbox grants, and has no network under network none;
// servers --json reports bubblewrap and the bwrap it runs. Where bwrap
// cannot make a sandbox (a stand-in bwrap that fails as one does without
// user namespaces) or is not installed, the server does not start, and the
// error says why and which setting does without it. bwrap itself is
// Debian's bubblewrap (`make sysdeps`): this machine must be able to run
// it, which the test checks first rather than skipping.
func TestSandboxBubblewrap(t *testing.T) {
	t.Parallel()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal("bwrap is not installed: this test needs Debian's bubblewrap package (run `make sysdeps`)")
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const canary = "CANARY-bwrap-ssh-key-7c2e"
	for _, d := range []string{".ssh", "work"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := writeFile(t, filepath.Join(home, ".ssh"), "id_ed25519", []byte(canary+"\n"))
	granted := writeFile(t, filepath.Join(home, "work"), "notes.txt", []byte("granted says hello\n"))
	addr, _ := loopbackListener(t)
	dir := t.TempDir()
	tools := writeFile(t, dir, "tools.json", []byte(`[
 {"name": "read", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}, "x-test": {"probe": "read"}},
 {"name": "dial", "inputSchema": {"type": "object", "properties": {"addr": {"type": "string"}}}, "x-test": {"probe": "dial"}}]`))
	srv := stdioServer(tools, filepath.Join(dir, "record.jsonl"))
	srv["sandbox"] = obj{"mechanism": "bubblewrap", "network": "none",
		"filesystem": obj{"read": []string{"${HOME}/work"}, "write": []string{dir}}}
	cfg := writeConfig(t, obj{"sandbox": obj{"mode": "enforce"}, "mcpServers": obj{"t": srv}, "approvals": allowAll()})
	path := "PATH=" + os.Getenv("PATH")
	env := []string{"HOME=" + home, path}

	r := run(t, env, "--config", cfg, "servers", "--json")
	wantCode(t, r, 0)
	rep := decodeStdout[sandboxReport](t, r)
	want, _ := filepath.EvalSymlinks(bwrap)
	if len(rep.Servers) != 1 || rep.Servers[0].Sandbox == nil || !strings.HasPrefix(rep.Servers[0].Sandbox.Mechanism, "bubblewrap+seccomp") ||
		rep.Servers[0].Sandbox.Bubblewrap != want || rep.Servers[0].Sandbox.Network != "none" {
		t.Fatalf("servers --json: want the bubblewrap mechanism with %s, network none\n%s", want, r)
	}
	call := func(env []string, tool string, args obj) result {
		return run(t, env, "--config", cfg, "call", "t", tool, "--args", mustJSON(args), "--json")
	}
	r = call(env, "read", obj{"path": granted})
	wantCode(t, r, 0)
	if doc := decodeStdout[callDoc](t, r); doc.IsError || !strings.Contains(doc.text(), "granted says hello") {
		t.Errorf("reading the granted folder under bubblewrap failed\n%s", r)
	}
	r = call(env, "read", obj{"path": key})
	if strings.Contains(r.stdout+r.stderr, canary) {
		t.Fatalf("the server under bubblewrap read the canary\n%s", r)
	}
	if doc := decodeStdout[callDoc](t, r); !doc.IsError || !strings.Contains(doc.text(), "no such file or directory") {
		t.Errorf("reading the canary: want it absent from the sandbox\n%s", r)
	}
	r = call(env, "dial", obj{"addr": addr})
	if doc := decodeStdout[callDoc](t, r); !doc.IsError || strings.Contains(doc.text(), "connected") {
		t.Errorf("dial under bubblewrap with network none: want a refusal\n%s", r)
	}

	// A bwrap that cannot make a sandbox here, first on the PATH; then no
	// bwrap at all.
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "bwrap"), []byte("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noBwrap := t.TempDir()
	for _, name := range []string{"true", "sh"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(noBwrap, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"bwrap cannot run", "PATH=" + fake + ":" + os.Getenv("PATH"), "cannot make a sandbox here (bwrap: No permissions to create new namespace"},
		{"bwrap missing", "PATH=" + noBwrap, "bwrap is not installed"},
	} {
		r := run(t, []string{"HOME=" + home, c.path}, "--config", cfg, "servers", "--json")
		wantCode(t, r, 6)
		rep := decodeStdout[sandboxReport](t, r)
		if len(rep.Servers) != 1 || rep.Servers[0].Status != "error" || rep.Servers[0].Error == nil {
			t.Fatalf("%s: want the server in error\n%s", c.name, r)
		}
		if msg := *rep.Servers[0].Error; !strings.Contains(msg, c.want) || !strings.Contains(msg, "sandbox.mechanism: landlock") {
			t.Errorf("%s: error %q: want %q and the setting that does without it", c.name, msg, c.want)
		}
	}
}

// TestSandboxHookAndPluginFromConfig: a hook and an exec credential plugin
// sandboxed by their own blocks in a config file, run by the real binary
// with a temporary home folder holding a canary: the hook (a PreToolUse
// script that writes what `cat` said of the canary to a file in the folder
// its sandbox lets it write) and the command the plugin runs (which prints
// what `cat` said as the value) are refused the file, while the same hook
// and plugin without a sandbox read it.
func TestSandboxHookAndPluginFromConfig(t *testing.T) {
	t.Parallel()
	bins := ftBins(t)
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const canary = "CANARY-home-secret-93ad"
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	key := writeFile(t, filepath.Join(home, ".ssh"), "id_ed25519", []byte(canary+"\n"))
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{ftSecureTool("a", obj{"text": "a ran"}, "token")})
	getter := ftScript(t, dir, "read-key-value.sh", `said=$(cat '`+key+`' 2>&1 | tr -d '"\\')
printf '{"Version":1,"Value":"cat said: %s"}' "$said"
`)
	env := []string{"HOME=" + home}

	for _, sandboxed := range []bool{true, false} {
		out := t.TempDir()
		hook := ftScript(t, dir, "read-key-hook-"+strconv.FormatBool(sandboxed)+".sh", `cat >/dev/null
cat '`+key+`' > '`+out+`/hook-read' 2>&1
exit 0
`)
		hookEntry := obj{"type": "command", "command": hook, "timeout": 10}
		source := ftPluginSource(t, bins.credExec, obj{"command": []string{getter}, "timeout": "5s"})
		if sandboxed {
			hookEntry["sandbox"] = obj{"mode": "enforce", "filesystem": obj{"read": []string{dir}, "write": []string{out}}}
			source["sandbox"] = obj{"mode": "enforce", "filesystem": obj{"read": []string{dir}}}
		}
		record := filepath.Join(t.TempDir(), "record.jsonl")
		cfg := writeConfig(t, obj{
			"mcpServers": obj{"srv": stdioServer(tools, record)},
			"hooks":      obj{"PreToolUse": []obj{{"matcher": "mcp__.*", "hooks": []obj{hookEntry}}}},
			"sources":    obj{"vault": source},
			"bindings":   []obj{{"server": "srv", "params": obj{"token": obj{"source": "vault", "ref": "k"}}}},
		})
		r := run(t, env, "--config", cfg, "call", "srv", "a", "--json")
		wantCode(t, r, 0)
		said, err := os.ReadFile(filepath.Join(out, "hook-read"))
		if err != nil {
			t.Fatalf("sandboxed %v: the hook did not run: %v\n%s", sandboxed, err, r)
		}
		if sandboxed != !strings.Contains(string(said), canary) || sandboxed != strings.Contains(string(said), "Permission denied") {
			t.Errorf("sandboxed %v: the hook's cat said %q", sandboxed, said)
		}
		got, _ := ftSecureArgs(t, record, "a")["token"].(string)
		if sandboxed != !strings.Contains(got, canary) || sandboxed != strings.Contains(got, "Permission denied") {
			t.Errorf("sandboxed %v: the plugin's command gave the value %q", sandboxed, got)
		}
	}
}
