//go:build unix && !linux

package hooks

import "syscall"

// procAttr puts a hook in a process group of its own (there is no
// parent-death signal here).
func procAttr(syscall.Signal) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
