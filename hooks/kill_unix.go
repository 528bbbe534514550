//go:build unix

package hooks

import "syscall"

// killGroup SIGKILLs a hook's process group: what it left running after it
// exited, or all of it on timeout. A hook runs in a process group of its
// own rather than a session (as servers do): starting a session costs a
// trivial hook several milliseconds per call, and a hook's descendants
// rarely leave its group.
func killGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
