package main

import "syscall"

// serverAttr is what childproc.Attr gives the host's stdio servers: a
// session of their own, and SIGKILL when this process dies.
func serverAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}
