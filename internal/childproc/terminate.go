package childproc

import (
	"syscall"
	"time"
)

// Grace is how long a tree gets to exit after SIGTERM before it is
// SIGKILLed. It stays well under mcp-go's own escalation (SIGTERM 2 s after
// stdin closes, SIGKILL 3 s later), so a supervisor always finishes its
// sweep before it could be killed itself.
const Grace = time.Second

// TerminateTree ends what is left of the tree of a child that led its own
// session (Attr): SIGTERM to every member, up to grace for them to exit,
// then SIGKILL. It returns at once when nothing is left.
func TerminateTree(pid int, grace time.Duration) {
	terminate(pid, pid, grace)
}

// terminate SIGTERMs the tree (session sid, or group pgid where sessions
// cannot be listed), polls until it is empty or grace passes, and then
// SIGKILLs whatever is left.
func terminate(sid, pgid int, grace time.Duration) {
	terminateBy(func(sig syscall.Signal) int { return signalTree(sid, pgid, sig) }, grace)
}

// terminateBy ends the tree that signal reaches (it sends sig to every
// member and returns how many it found): SIGTERM, up to grace for the tree
// to empty, then SIGKILL.
func terminateBy(signal func(syscall.Signal) int, grace time.Duration) {
	if signal(syscall.SIGTERM) == 0 {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if signal(0) == 0 {
			return
		}
	}
	for pass := 0; pass < 10; pass++ {
		if signal(syscall.SIGKILL) == 0 {
			return
		}
	}
}
