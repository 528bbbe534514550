package main

import "syscall"

// commandProcAttr gives each command its own process group (so a timeout
// can kill all of it) and has the kernel kill it if the plugin dies.
func commandProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
