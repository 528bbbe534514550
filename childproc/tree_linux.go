package childproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
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

// KillTree SIGKILLs the process group of pid and then every process left
// in the session pid leads. The session sweep catches descendants that
// moved to process groups of their own, which a group kill alone would
// miss. A session id stays reserved while any member lives, so the sweep
// cannot hit an unrelated process that reused the pid.
func KillTree(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for pass := 0; pass < 10; pass++ {
		if signalTree(pid, pid, syscall.SIGKILL) == 0 {
			return
		}
	}
}

// signalTree sends sig to the live (non-zombie) members of session sid
// other than this process, and returns how many it found. pgid is unused
// on Linux (the session covers it).
func signalTree(sid, _ int, sig syscall.Signal) int {
	dir, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	found := 0
	self := os.Getpid()
	for _, e := range dir {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == self {
			continue
		}
		s, state, ok := procSession(p)
		if !ok || s != sid || state == 'Z' {
			continue
		}
		found++
		_ = syscall.Kill(p, sig)
	}
	return found
}

// procSession reads the session id and state of pid from /proc/PID/stat.
func procSession(pid int) (sid int, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name is in parentheses and may contain spaces; fields
	// after the last ')' are: state ppid pgrp session ...
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 || len(f[0]) == 0 {
		return 0, 0, false
	}
	s, err := strconv.Atoi(string(f[3]))
	if err != nil {
		return 0, 0, false
	}
	return s, f[0][0], true
}

// selfExe is the running binary, even if its file was replaced since.
func selfExe() string { return "/proc/self/exe" }
