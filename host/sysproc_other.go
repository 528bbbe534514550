//go:build !linux

package host

import "syscall"

func linuxChildAttr() *syscall.SysProcAttr { return nil }
