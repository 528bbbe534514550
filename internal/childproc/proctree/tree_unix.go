//go:build unix && !linux

package proctree

import "syscall"

func supervisedAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalSupervised sends sig to the supervised child's process group (a
// descendant that left it is not found here) and reports whether it had
// members.
func signalSupervised(_, child int, sig syscall.Signal) int {
	if syscall.Kill(-child, sig) != nil {
		return 0
	}
	return 1
}

// becomeSubreaper: there are no child subreapers here.
func becomeSubreaper() error { return nil }

// nameSelf: processes are not renamed here.
func nameSelf() {}
