//go:build !unix

package hooks

import "syscall"

func procAttr() *syscall.SysProcAttr { return nil }
