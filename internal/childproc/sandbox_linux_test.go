//go:build linux

package childproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// probe is what the sandboxed grandchild of runSandboxed does, named by
// CHILDPROC_PROBE: it exits 0 when the operation succeeded and 1 (with the
// error on stderr) when it failed.
func probe(what string) int {
	op, arg, _ := strings.Cut(what, ":")
	var err error
	switch op {
	case "read":
		_, err = os.ReadFile(arg)
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o600)
	case "dial":
		var c net.Conn
		if c, err = net.Dial("tcp", arg); err == nil {
			_ = c.Close()
		}
	case "udp":
		var c net.Conn
		if c, err = net.Dial("udp", arg); err == nil {
			_ = c.Close()
		}
	case "alloc":
		n, _ := strconv.Atoi(arg)
		var b []byte
		b, err = syscall.Mmap(-1, 0, n<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err == nil {
			_ = syscall.Munmap(b)
		}
	case "setrlimit":
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20})
	default:
		err = fmt.Errorf("unknown probe %q", what)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runSandboxed runs the test binary as a sandboxed supervisor whose child
// (the test binary again) runs the probe; it returns the child's status and
// the output.
func runSandboxed(t *testing.T, sb Sandbox, what string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb.Read = append(sb.Read, systemReadPaths()...)
	sb.Read = append(sb.Read, filepath.Dir(self))
	b, err := json.Marshal(&sb)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "CHILDPROC_SUPERVISE_HELPER=sandbox", "CHILDPROC_SANDBOX="+string(b), "CHILDPROC_PROBE="+what)
	cmd.SysProcAttr = Attr(9)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return 0, string(out)
	case errors.As(err, &exitErr):
		return exitErr.ExitCode(), string(out)
	}
	t.Fatalf("supervisor: %v", err)
	return 0, ""
}

func TestSandboxEnforced(t *testing.T) {
	if kernelLandlockABI() < abiNetwork {
		t.Fatalf("this kernel has Landlock ABI %d; the sandbox tests need %d", kernelLandlockABI(), abiNetwork)
	}
	granted, other := t.TempDir(), t.TempDir()
	secret := filepath.Join(other, "secret")
	if err := os.WriteFile(secret, []byte("canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(granted, "mine")
	if err := os.WriteFile(mine, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	addr := ln.Addr().String()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	tests := []struct {
		name  string
		sb    Sandbox
		probe string
		ok    bool
	}{
		{"read granted", Sandbox{Read: []string{granted}, Network: NetworkNone}, "read:" + mine, true},
		{"read elsewhere", Sandbox{Read: []string{granted}, Network: NetworkNone}, "read:" + secret, false},
		{"write not granted", Sandbox{Read: []string{granted}, Network: NetworkNone}, "write:" + filepath.Join(granted, "new"), false},
		{"write granted", Sandbox{Write: []string{granted}, Network: NetworkNone}, "write:" + filepath.Join(granted, "new"), true},
		{"write elsewhere", Sandbox{Write: []string{granted}, Network: NetworkNone}, "write:" + filepath.Join(other, "new"), false},
		{"none dials nothing", Sandbox{Network: NetworkNone}, "dial:" + addr, false},
		{"none sends no udp", Sandbox{Network: NetworkNone}, "udp:" + addr, false},
		{"loopback dials its port", Sandbox{Network: NetworkLoopback, Ports: []uint16{port}}, "dial:" + addr, true},
		{"loopback dials no other port", Sandbox{Network: NetworkLoopback, Ports: []uint16{port + 1}}, "dial:" + addr, false},
		{"loopback sends no udp", Sandbox{Network: NetworkLoopback, Ports: []uint16{port}}, "udp:" + addr, false},
		{"allow dials", Sandbox{Network: NetworkAllow}, "dial:" + addr, true},
		{"allow with ports dials no other", Sandbox{Network: NetworkAllow, Ports: []uint16{port + 1}}, "dial:" + addr, false},
		{"allow with ports sends udp", Sandbox{Network: NetworkAllow, Ports: []uint16{port + 1}}, "udp:" + addr, true},
		{"address space bounded", Sandbox{Limits: Limits{AddressSpace: 3 << 30}}, "alloc:4096", false},
		{"address space within", Sandbox{Limits: Limits{AddressSpace: 4 << 30}}, "alloc:64", true},
		{"limits cannot be raised", Sandbox{Limits: Limits{OpenFiles: 64}}, "setrlimit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := runSandboxed(t, tt.sb, tt.probe)
			if got := code == 0; got != tt.ok {
				t.Fatalf("%s: exit %d, want success %v\n%s", tt.probe, code, tt.ok, out)
			}
		})
	}
}

func TestSandboxCheck(t *testing.T) {
	tests := []struct {
		name string
		sb   Sandbox
		abi  int
		want string // "" for no error
	}{
		{"no landlock", Sandbox{Network: NetworkNone}, 0, "sandbox.mode: off"},
		{"none on abi 1", Sandbox{Network: NetworkNone}, 1, ""},
		{"loopback on abi 3", Sandbox{Network: NetworkLoopback, Ports: []uint16{80}}, 3, "needs Landlock ABI 4"},
		{"allow ports on abi 3", Sandbox{Network: NetworkAllow, Ports: []uint16{80}}, 3, "sandbox.network: allow without ports"},
		{"allow on abi 1", Sandbox{Network: NetworkAllow}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.sb.check(tt.abi)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("check: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrSandboxUnavailable) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("check: %v, want ErrSandboxUnavailable naming %q", err, tt.want)
			}
		})
	}
}

// sandboxHelper is TestMain's sandboxed-supervisor and probe roles.
func sandboxHelper() (int, bool) {
	if p := os.Getenv("CHILDPROC_PROBE"); p != "" && os.Getenv("CHILDPROC_SUPERVISE_HELPER") == "" {
		return probe(p), true
	}
	if os.Getenv("CHILDPROC_SUPERVISE_HELPER") != "sandbox" {
		return 0, false
	}
	self, _ := os.Executable()
	// The probe child must not act as a supervisor again.
	_ = os.Unsetenv("CHILDPROC_SUPERVISE_HELPER")
	return superviseArgs([]string{sandboxArg, os.Getenv("CHILDPROC_SANDBOX"), "0", self, self}), true
}

func TestCommandPaths(t *testing.T) {
	dir := t.TempDir()
	mk := func(rel string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	node := mk("home/.nvm/v22/bin/node")
	script := mk("proj/node_modules/@scope/server/dist/index.js")
	plain := mk("home/server.py")
	tool := mk("home/tool")
	cmd := exec.Command(node, script, "--flag", plain, "not-a-file")
	got := commandPaths(cmd, nil)
	want := []string{
		filepath.Join(dir, "home/.nvm/v22/bin"), filepath.Join(dir, "home/.nvm/v22/lib"),
		filepath.Join(dir, "home/.nvm/v22/lib64"), filepath.Join(dir, "home/.nvm/v22/libexec"),
		plain, filepath.Join(dir, "proj/node_modules"),
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("commandPaths = %q, want %q", got, want)
	}
	// An executable outside a bin folder grants itself, not its folder
	// (which may be the home folder).
	if got := commandPaths(exec.Command(tool), nil); !slices.Equal(got, []string{tool}) {
		t.Fatalf("commandPaths = %q, want just %q", got, tool)
	}
	// A script argument in a writable folder (the server's cwd) grants
	// nothing: the child could have replaced it with a link to a secret,
	// whose target its next start would otherwise be granted.
	work := filepath.Join(dir, "work")
	secret := mk("home/.ssh/id_ed25519")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(work, "data.json")); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(node, "data.json")
	cmd.Dir = work
	for _, p := range commandPaths(cmd, []string{work}) {
		if strings.HasPrefix(p, filepath.Join(dir, "home/.ssh")) || strings.HasPrefix(p, work) {
			t.Errorf("a link in the writable folder granted %s", p)
		}
	}
}

// TestSmallSupervisesOnlyWithoutASandbox: a Supervisor with a small
// supervisor runs it for Wrap and for the long-lived Spawner, and always
// its own Path for WrapSandboxed (the small one holds no sandbox and
// refuses one).
func TestSmallSupervisesOnlyWithoutASandbox(t *testing.T) {
	t.Setenv(landlockABIOverride, "6") // Check passes whatever the kernel
	s := &Supervisor{Path: "/opt/agenthost", Small: "/opt/agenthost-supervise"}
	plain := exec.Command("/bin/true")
	s.Wrap(plain)
	if plain.Path != s.Small || plain.Args[0] != s.Small || plain.Args[1] != SuperviseArg {
		t.Errorf("Wrap: %s %q, want the small supervisor", plain.Path, plain.Args)
	}
	sandboxed := exec.Command("/bin/true")
	if _, err := s.WrapSandboxed(sandboxed, &Sandbox{Network: NetworkNone}); err != nil {
		t.Fatal(err)
	}
	if sandboxed.Path != s.Path || sandboxed.Args[0] != s.Path || sandboxed.Args[2] != sandboxArg {
		t.Errorf("WrapSandboxed: %s %q, want %s with the sandbox", sandboxed.Path, sandboxed.Args, s.Path)
	}
	if sp := s.Spawner(); sp.path != s.Small {
		t.Errorf("Spawner runs %s, want %s", sp.path, s.Small)
	}
	// Without a small supervisor, every start is Path's.
	own := &Supervisor{Path: "/opt/agenthost"}
	cmd := exec.Command("/bin/true")
	own.Wrap(cmd)
	if cmd.Path != own.Path {
		t.Errorf("Wrap without Small: %s, want %s", cmd.Path, own.Path)
	}
}
