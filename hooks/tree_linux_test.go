package hooks

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			deadline := time.Now().Add(5 * time.Second)
			for alive(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the hook's descendant in a session of its own (pid %d) outlived it by 5s", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// alive reports a process that exists (kill(pid, 0)) and is not a zombie
// waiting for its new parent to reap it.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
