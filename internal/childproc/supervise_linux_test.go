//go:build linux

package childproc

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
	"github.com/agenthost/agenthost/internal/proctest"
)

func TestRunnable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "data")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	relative := exec.Command("./server")
	relative.Dir = dir
	tests := []struct {
		name string
		cmd  *exec.Cmd
		want bool
	}{
		{"absolute executable", exec.Command(exe), true},
		{"relative to Dir", relative, true},
		{"missing", exec.Command(filepath.Join(dir, "no-such-server")), false},
		{"not executable", exec.Command(plain), false},
		{"not on PATH", exec.Command("agenthost-surely-not-on-path"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Runnable(tt.cmd); got != tt.want {
				t.Fatalf("Runnable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	cmd := exec.Command("/bin/echo", "a", "b")
	cmd.ExtraFiles = []*os.File{os.Stdin}
	(&Supervisor{Path: "/sup"}).Wrap(cmd)
	want := []string{"/sup", SuperviseArg, "1", "/bin/echo", "/bin/echo", "a", "b"}
	if cmd.Path != "/sup" || !slices.Equal(cmd.Args, want) {
		t.Fatalf("Wrap: %s %q, want /sup %q", cmd.Path, cmd.Args, want)
	}
	var none *Supervisor
	cmd = exec.Command("/bin/echo")
	none.Wrap(cmd)
	if cmd.Path != "/bin/echo" {
		t.Fatalf("a nil Supervisor changed the command: %s", cmd.Path)
	}
}

func TestSuperviseArgsRejects(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"nothing", nil},
		{"no command", []string{"0", "/bin/true"}},
		{"bad count", []string{"x", "/bin/true", "true"}},
		{"negative count", []string{"-1", "/bin/true", "true"}},
		{"huge count", []string{"1000", "/bin/true", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := superviseArgs(tt.args); got != exitCannotRun {
				t.Fatalf("superviseArgs(%q) = %d, want %d", tt.args, got, exitCannotRun)
			}
		})
	}
}

// TestSuperviseEndsLeftovers runs the supervisor on a shell that leaves a
// process behind: the process must be gone when the supervisor exits, and
// the shell's exit status comes back. The orphan in a session of its own
// (its parent, a subshell, exited before the shell) is found only because
// the supervisor is its subreaper: a sweep of the supervisor's session
// and of its members' descendants missed it.
func TestSuperviseEndsLeftovers(t *testing.T) {
	tests := []struct {
		name   string
		script string // leaves a process behind, writes its pid to $PIDFILE
		setsid bool
	}{
		{"background job", `sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE"; exit 3`, false},
		{"orphan in a session of its own",
			`( setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE" ); exit 3`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath("setsid"); tt.setsid && err != nil {
				t.Skip("no setsid program (util-linux)")
			}
			pidfile := filepath.Join(t.TempDir(), "pid")
			// The test process is not a session leader, so the sweep by
			// session would not find the sleep: run the supervisor as its
			// own process.
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CHILDPROC_SUPERVISE_HELPER=1", "CHILDPROC_SCRIPT="+tt.script, "PIDFILE="+pidfile)
			cmd.SysProcAttr = Attr(9)
			err := cmd.Run()
			var exitErr *exec.ExitError
			if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
				t.Fatalf("supervisor: %v, want exit status 3", err)
			}
			pid := proctest.ReadPid(t, pidfile)
			// The supervisor ended the tree before it exited: the SIGKILL
			// may still be on its way, hence the short bounded wait.
			proctest.WaitGone(t, "the shell's leftover", pid, 2*time.Second)
		})
	}
}

// TestMain doubles as the supervisor process of TestSuperviseEndsLeftovers.
func TestMain(m *testing.M) {
	if code, ok := sandboxHelper(); ok {
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == proctree.Arg {
		if code, ok := proctree.Main(os.Args[2:]); ok {
			os.Exit(code)
		}
	}
	if os.Getenv("CHILDPROC_SPAWN_HOST") != "" {
		os.Exit(spawnHost(os.Getenv("CHILDPROC_SPAWN_HOST")))
	}
	if os.Getenv("CHILDPROC_SUPERVISE_HELPER") == "1" {
		os.Exit(superviseArgs([]string{"0", "/bin/sh", "sh", "-c", os.Getenv("CHILDPROC_SCRIPT")}))
	}
	os.Exit(m.Run())
}

// TestKillTreeFindsSessionLeavers: a descendant that started a session of
// its own is killed with the tree while its parent is in it.
func TestKillTreeFindsSessionLeavers(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program (util-linux)")
	}
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command("/bin/sh", "-c", "setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "+pidfile+".tmp; mv "+pidfile+".tmp "+pidfile+"; wait")
	cmd.SysProcAttr = Attr(syscall.SIGKILL)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0; {
		if b, err := os.ReadFile(pidfile); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		if time.Now().After(deadline) {
			KillTree(cmd.Process.Pid)
			t.Fatal("no pid written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	KillTree(cmd.Process.Pid)
	_ = cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if _, state, ok := procSession(pid); !ok || state == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the descendant in a session of its own (pid %d) outlived KillTree", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
