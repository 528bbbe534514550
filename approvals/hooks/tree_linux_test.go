package hooks

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/proctest"
)

// TestHookTreeEnds: what a hook starts ends with it, also a process that
// started a session of its own (setsid), which a kill of the hook's
// process group missed: after a timeout (its parent, the hook, still
// running) and after the hook finished (its parent, a background job of
// the hook, still running).
func TestHookTreeEnds(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program (util-linux) to start a session with")
	}
	tests := []struct {
		name    string
		body    string // writes the session leader's pid to $PIDFILE
		timeout float64
		wantErr error
	}{
		{"timed out, its child in a session of its own",
			`setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; wait`,
			0.5, ErrTimeout},
		{"finished, its grandchild in a session of its own",
			`( setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"; wait ) >/dev/null 2>&1 </dev/null &
while [ ! -s "$PIDFILE" ]; do sleep 0.01; done
echo '{}'`,
			10, nil},
		// Its parent, the hook, exited: the orphan was reparented to init,
		// out of any tree the host could find, until the supervisor became
		// the hook's subreaper.
		{"finished, its child in a session of its own orphaned",
			`setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "$PIDFILE.tmp"; mv "$PIDFILE.tmp" "$PIDFILE"
echo '{}'`,
			10, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			r := newRunner(t, pre(script(t, dir, "hook.sh", tt.body), func(h *Hook) {
				h.Timeout = tt.timeout
				h.Env = map[string]string{"PIDFILE": pidFile}
			}), dir)
			v := r.Pre(context.Background(), call)
			if !errors.Is(v.Failure, tt.wantErr) || (tt.wantErr == nil) != (v.Failure == nil) {
				t.Fatalf("failure = %v, want %v", v.Failure, tt.wantErr)
			}
			pid := proctest.ReadPid(t, pidFile)
			proctest.WaitGone(t, "the hook's descendant in a session of its own", pid, 5*time.Second)
		})
	}
}

// TestHookTreeDiesWithTheHost SIGKILLs a host (this test binary, see
// hostHelper) while its hook runs: the hook and its child in a session of
// its own must go too. The hook died with the host (its parent-death
// signal), but its child did not, until hooks ran under the supervisor,
// which learns of the host's death and ends the tree.
func TestHookTreeDiesWithTheHost(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program (util-linux) to start a session with")
	}
	dir := t.TempDir()
	hookPid, childPid := filepath.Join(dir, "hook.pid"), filepath.Join(dir, "child.pid")
	command := `echo $$ > "` + hookPid + `.tmp"; mv "` + hookPid + `.tmp" "` + hookPid + `"
setsid sleep 300 >/dev/null 2>&1 </dev/null & echo $! > "` + childPid + `.tmp"; mv "` + childPid + `.tmp" "` + childPid + `"
wait`
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostHelperEnv+"="+command)
	var stderr strings.Builder
	host.Stderr = &stderr
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	hook := proctest.ReadPid(t, hookPid)
	child := proctest.ReadPid(t, childPid)
	t.Cleanup(func() {
		_ = syscall.Kill(hook, syscall.SIGKILL)
		_ = syscall.Kill(child, syscall.SIGKILL)
	})
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	if strings.Contains(stderr.String(), "the hook ended") {
		t.Fatalf("the hook ended before the host was killed: %s", stderr.String())
	}
	proctest.WaitGone(t, "the killed host's hook", hook, 5*time.Second)
	proctest.WaitGone(t, "the killed host's hook's child in a session of its own", child, 5*time.Second)
}
