//go:build unix && !linux

package childproc

import "syscall"

// Attr is the SysProcAttr of a child the host owns: a session and process
// group of its own. There is no parent-death signal outside Linux.
func Attr(syscall.Signal) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// KillTree SIGKILLs the process group of pid.
func KillTree(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// signalTree sends sig to process group pgid and reports whether it had
// members.
func signalTree(_, pgid int, sig syscall.Signal) int {
	if syscall.Kill(-pgid, sig) != nil {
		return 0
	}
	return 1
}

// signalGroupTree sends sig to process group pgid and reports whether it
// had members.
func signalGroupTree(pgid int, sig syscall.Signal) int { return signalTree(0, pgid, sig) }

// selfExe: without a parent-death signal a supervisor would not learn of
// the host's death, so there is none outside Linux.
func selfExe() string { return "" }
