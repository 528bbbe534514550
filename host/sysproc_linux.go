package host

import "syscall"

// linuxChildAttr makes a stdio server die with the host (no orphans after a
// SIGKILL of the host).
func linuxChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
