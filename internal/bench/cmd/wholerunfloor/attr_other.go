//go:build !linux

package main

import "syscall"

func serverAttr() *syscall.SysProcAttr { return nil }
