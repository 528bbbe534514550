//go:build unix

package regularfile

import "syscall"

// openNonBlocking keeps open(2) of a named pipe without a writer from
// blocking.
const openNonBlocking = syscall.O_NONBLOCK
