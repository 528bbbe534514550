//go:build !unix

package hooks

import "syscall"

func procAttr(syscall.Signal) *syscall.SysProcAttr { return nil }
