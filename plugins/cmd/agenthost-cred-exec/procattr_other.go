//go:build unix && !linux

package main

import "syscall"

// commandProcAttr gives each command its own process group so a timeout
// can kill all of it.
func commandProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
