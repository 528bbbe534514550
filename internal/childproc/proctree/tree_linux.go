package proctree

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// supervisedAttr is the SysProcAttr the supervisor gives its child: a
// process group of its own inside the supervisor's session, and SIGKILL if
// the supervisor dies.
func supervisedAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalSupervised sends sig to the tree of the supervisor self: its
// children (the supervised child, and every orphan of the child's tree,
// which the kernel reparents to the supervisor, a child subreaper), the
// members of its session when it leads one and of the child's process
// group (which cover the tree where the supervisor could not become a
// subreaper), and every descendant of theirs, and returns how many it
// found.
func signalSupervised(self, child int, sig syscall.Signal) int {
	return SignalMembers(func(st Stat) bool { return st.PPid == self || st.Sid == self || st.Pgrp == child }, sig)
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// prSetName is PR_SET_NAME (linux/prctl.h).
const prSetName = 15

// Name is the name a supervisor gives itself (ps, top, /proc/PID/comm),
// whatever the path it was executed by: /proc/self/fd/N, when the CLI runs
// the small supervisor through the descriptor it checked, would name it
// after the descriptor's number.
const Name = "agenthost-sup"

// nameSelf gives this process (the calling thread, the main one during
// init, and the threads started after it) the name Name.
func nameSelf() {
	name := []byte(Name + "\x00")
	_, _, _ = syscall.RawSyscall6(syscall.SYS_PRCTL, prSetName, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0, 0)
	runtime.KeepAlive(name)
}

// becomeSubreaper makes this process (the supervisor) the child subreaper
// of its tree: a descendant orphaned there (one that started a session of
// its own and whose parent exited) is reparented to it instead of init, so
// it stays in the tree the supervisor ends.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0, 0, 0, 0); errno != 0 {
		return errno
	}
	return nil
}

// SignalMembers sends sig to the live processes other than this one that
// are members (a session's, a group's: member says) and to every
// descendant of theirs, and returns how many it found. Descendants are
// found by their parent, so one that started a session (or group) of its
// own is found while its parent is in the tree; all are listed before any
// is signalled, so killing a parent cannot orphan a child out of the
// sweep. Only live members are roots, never the session or group id
// itself: such an id stays reserved while a member lives, a pid alone
// could have been reused.
func SignalMembers(member func(Stat) bool, sig syscall.Signal) int {
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
		st, ok := ReadStat(p)
		if !ok {
			continue
		}
		if member(st) {
			inTree[p] = true
			if st.State != 'Z' {
				targets = append(targets, p)
			}
			continue
		}
		if st.State != 'Z' {
			children[st.PPid] = append(children[st.PPid], p)
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

// Stat is what SignalMembers reads of a process.
type Stat struct {
	State                byte
	Pid, PPid, Pgrp, Sid int
}

// ReadStat reads the state, parent, group and session of pid from
// /proc/PID/stat.
func ReadStat(pid int) (Stat, bool) {
	var buf [512]byte
	b, err := readProcFile("/proc/"+strconv.Itoa(pid)+"/stat", buf[:])
	if err != nil {
		return Stat{}, false
	}
	// The command name is in parentheses and may contain spaces; fields
	// after the last ')' are: state ppid pgrp session ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return Stat{}, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) == 0 {
		return Stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	s, err3 := strconv.Atoi(string(f[3]))
	if err1 != nil || err2 != nil || err3 != nil {
		return Stat{}, false
	}
	return Stat{State: f[0][0], Pid: pid, PPid: ppid, Pgrp: pgrp, Sid: s}, true
}

// readProcFile reads a small file of /proc into buf (growing it if the
// file is larger) with bare system calls: open, read to EOF, close.
// os.ReadFile also tries to register each file with the runtime's poller
// (an epoll_ctl that /proc refuses and four fcntl calls) and stats it, ten
// calls instead of four: a sweep of /proc reads one such file a process,
// and the supervisor reads one a thread each time a child exits.
func readProcFile(path string, buf []byte) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	for err == syscall.EINTR {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	}
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf)+512)...)
		}
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}
