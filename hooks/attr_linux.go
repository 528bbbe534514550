package hooks

import "syscall"

// procAttr puts a hook in a process group of its own, killed when the
// host's thread that started it dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
