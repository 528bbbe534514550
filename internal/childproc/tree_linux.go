package childproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Attr is the SysProcAttr of a child the host owns: a session of its own
// (session id = process group id = its pid), and deathSig when the thread
// that started it ends (the host dying). Pass SIGKILL for a plain child and
// SIGTERM for a supervisor, which then ends the tree itself.
func Attr(deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: deathSig}
}

// supervisedAttr is the SysProcAttr the supervisor gives its child: a
// process group of its own inside the supervisor's session, and SIGKILL if
// the supervisor dies.
func supervisedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
// how many it found (see signalMembers). pgid is unused on Linux (the
// session covers it).
func signalTree(sid, _ int, sig syscall.Signal) int {
	return signalMembers(func(st stat) bool { return st.sid == sid }, sig)
}

// signalSupervised sends sig to the tree of the supervisor self: its
// children (the supervised child, and every orphan of the child's tree,
// which the kernel reparents to the supervisor, a child subreaper), the
// members of its session when it leads one and of the child's process
// group (which cover the tree where the supervisor could not become a
// subreaper), and every descendant of theirs, and returns how many it
// found.
func signalSupervised(self, child int, sig syscall.Signal) int {
	return signalMembers(func(st stat) bool { return st.ppid == self || st.sid == self || st.pgrp == child }, sig)
}

// becomeSubreaper makes this process (the supervisor) the child subreaper
// of its tree: a descendant orphaned there (one that started a session of
// its own and whose parent exited) is reparented to it instead of init, so
// it stays in the tree the supervisor ends.
func becomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}

// signalGroupTree is signalTree for the members of process group pgid.
func signalGroupTree(pgid int, sig syscall.Signal) int {
	return signalMembers(func(st stat) bool { return st.pgrp == pgid }, sig)
}

// signalMembers sends sig to the live processes other than this one that
// are members (a session's, a group's: member says) and to every
// descendant of theirs, and returns how many it found. Descendants are
// found by their parent, so one that started a session (or group) of its
// own is found while its parent is in the tree; all are listed before any
// is signalled, so killing a parent cannot orphan a child out of the
// sweep. Only live members are roots, never the session or group id
// itself: such an id stays reserved while a member lives, a pid alone
// could have been reused.
func signalMembers(member func(stat) bool, sig syscall.Signal) int {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	self := os.Getpid()
	var targets []int
	inTree := map[int]bool{}
	children := map[int][]int{}
	for _, e := range dir {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == self {
			continue
		}
		st, ok := procStat(p)
		if !ok {
			continue
		}
		if member(st) {
			inTree[p] = true
			if st.state != 'Z' {
				targets = append(targets, p)
			}
			continue
		}
		if st.state != 'Z' {
			children[st.ppid] = append(children[st.ppid], p)
		}
	}
	// The descendants outside the session, breadth first from its members.
	for i := 0; i < len(targets); i++ {
		for _, c := range children[targets[i]] {
			if !inTree[c] {
				inTree[c] = true
				targets = append(targets, c)
			}
		}
	}
	for _, p := range targets {
		_ = syscall.Kill(p, sig)
	}
	return len(targets)
}

// stat is what signalTree reads of a process.
type stat struct {
	state           byte
	ppid, pgrp, sid int
}

// procSession reads the session id and state of pid from /proc/PID/stat.
func procSession(pid int) (sid int, state byte, ok bool) {
	st, ok := procStat(pid)
	return st.sid, st.state, ok
}

// procStat reads the state, parent, group and session of pid from /proc/PID/stat.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	// The command name is in parentheses and may contain spaces; fields
	// after the last ')' are: state ppid pgrp session ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) == 0 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	s, err3 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{state: f[0][0], ppid: ppid, pgrp: pgrp, sid: s}, true
}

// selfExe is the running binary, even if its file was replaced since.
func selfExe() string { return "/proc/self/exe" }
