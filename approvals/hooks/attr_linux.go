package hooks

import "syscall"

// procAttr puts a hook (or its supervisor) in a process group of its own,
// sent deathSig when the host's thread that started it dies.
func procAttr(deathSig syscall.Signal) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: deathSig}
}
