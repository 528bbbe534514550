//go:build !unix

package childproc

import (
	"os"
	"syscall"
)

// Attr: sessions and process groups are a Unix idea.
func Attr(syscall.Signal) *syscall.SysProcAttr { return nil }

// KillTree kills the process only.
func KillTree(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}

func signalTree(_, _ int, _ syscall.Signal) int { return 0 }

func selfExe() string { return "" }
