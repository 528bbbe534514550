//go:build unix

// Package proctest owns the test helpers that watch real child processes
// by pid: reading the pid a test script wrote, and waiting, bounded, for a
// process to be gone.
package proctest

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ReadPid waits (at most 10 s) for path to hold a pid, as a test script
// writes it (write to a temporary name, then rename), and returns it.
func ReadPid(t testing.TB, path string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("pid file %s: %v", path, err)
			}
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no pid in %s after 10s", path)
		}
	}
}

// Alive reports a process that exists (kill(pid, 0)) and is not a zombie
// waiting for its parent to reap it.
func Alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // no /proc (not Linux): kill(pid, 0) is all there is
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// WaitGone polls (bounded by within) until pid is gone, and fails the test
// naming what when it is not; the process is SIGKILLed then, so a failed
// test leaves nothing running.
func WaitGone(t testing.TB, what string, pid int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); Alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("%s (pid %d) still running %s later", what, pid, within)
		}
	}
}
