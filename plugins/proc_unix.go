//go:build unix && !linux

package plugins

import "syscall"

// sysProcAttr puts the plugin in its own session and process group. There
// is no parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// killTree SIGKILLs the plugin's process group.
func killTree(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }
