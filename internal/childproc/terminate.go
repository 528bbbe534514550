package childproc

import (
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// Grace is how long a tree gets to exit after SIGTERM before it is
// SIGKILLed (proctree.Grace).
const Grace = proctree.Grace

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
	proctree.TerminateBy(func(sig syscall.Signal) int { return signalTree(sid, pgid, sig) }, grace)
}
