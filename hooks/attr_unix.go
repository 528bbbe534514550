//go:build unix && !linux

package hooks

import "syscall"

// procAttr puts a hook in a process group of its own.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
