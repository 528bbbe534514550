package childproc

import (
	"syscall"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// Attr is the SysProcAttr of a child the host owns: a session of its own
// (session id = process group id = its pid), and deathSig when the thread
// that started it ends (the host dying). Pass SIGKILL for a plain child and
// SIGTERM for a supervisor, which then ends the tree itself.
func Attr(deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: deathSig}
}

// KillTree SIGKILLs every process in the session pid leads, with the
// descendants of those processes, and then the process group of pid. The
// session sweep catches descendants that moved to process groups of their
// own, which a group kill alone would miss; the descendant walk those that
// started sessions of their own, as long as their parent is still in the
// tree (an orphan that left the session is reparented outside it, and no
// longer known as part of the tree). A session id stays reserved while any
// member lives, so the sweep cannot hit an unrelated process that reused
// the pid.
func KillTree(pid int) {
	// The sweep comes first: a group kill would end the parents of the
	// descendants that left the session before the sweep could find them.
	for pass := 0; pass < 10; pass++ {
		if signalTree(pid, pid, syscall.SIGKILL) == 0 {
			break
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// signalTree sends sig to the live (non-zombie) members of session sid
// other than this process, and to every descendant of theirs, and returns
// how many it found (see proctree.SignalMembers). pgid is unused on Linux (the
// session covers it).
func signalTree(sid, _ int, sig syscall.Signal) int {
	return proctree.SignalMembers(func(st proctree.Stat) bool { return st.Sid == sid }, sig)
}

// signalGroupTree is signalTree for the members of process group pgid.
func signalGroupTree(pgid int, sig syscall.Signal) int {
	return proctree.SignalMembers(func(st proctree.Stat) bool { return st.Pgrp == pgid }, sig)
}

// procSession reads the session id and state of pid from /proc/PID/stat.
func procSession(pid int) (sid int, state byte, ok bool) {
	st, ok := proctree.ReadStat(pid)
	return st.Sid, st.State, ok
}

// selfExe is the running binary, even if its file was replaced since.
func selfExe() string { return "/proc/self/exe" }
