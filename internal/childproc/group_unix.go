//go:build unix

package childproc

import "syscall"

// Groups. A child started at a high rate (a hook, once per tool call) runs
// in a process group of its own rather than a session: a session of its
// own costs it a scheduling group of its own too (autogroup), milliseconds
// per start on a loaded machine. Its tree is then the group's members and
// their descendants.

// KillGroupTree SIGKILLs every member of process group pgid and every
// descendant of theirs, then the group. On Linux descendants are found by
// their parent, so those that started sessions or groups of their own are
// found while their parent is in the tree; elsewhere only the group is
// killed.
func KillGroupTree(pgid int) {
	// The sweep comes first: a group kill would end the parents of the
	// descendants that left the group before the sweep could find them.
	for pass := 0; pass < 10; pass++ {
		if signalGroupTree(pgid, syscall.SIGKILL) == 0 {
			break
		}
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// KillGroupLeftovers ends what a group leader that exited (and was
// reaped) left running: nothing when the group is empty (one signal-0
// probe, no sweep of every process), else KillGroupTree. A descendant that
// left the group while nothing of the group is left is not found: its
// parent is gone, so nothing links it to the tree any more.
func KillGroupLeftovers(pgid int) {
	if syscall.Kill(-pgid, 0) != nil {
		return
	}
	KillGroupTree(pgid)
}
