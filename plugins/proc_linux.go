package plugins

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// sysProcAttr puts the plugin in its own session (and so its own process
// group, pgid = pid) and has the kernel SIGKILL it if the host dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// killTree SIGKILLs the plugin's process group and then every process left
// in the plugin's session. The session sweep catches descendants that moved
// to process groups of their own (cred-exec runs each command in its own
// group so it can time it out), which a group kill alone would miss. A
// session id stays reserved while any member lives, so the sweep cannot hit
// an unrelated process that reused the pid.
func killTree(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	for pass := 0; pass < 10; pass++ {
		if killSession(pid) == 0 {
			return
		}
	}
}

// killSession kills the live (non-zombie) processes of session sid and
// returns how many it found.
func killSession(sid int) int {
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
		_ = syscall.Kill(p, syscall.SIGKILL)
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
