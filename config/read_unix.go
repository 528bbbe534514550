//go:build unix

package config

import "syscall"

// openNonBlocking keeps open(2) of a FIFO without a writer from blocking.
const openNonBlocking = syscall.O_NONBLOCK
