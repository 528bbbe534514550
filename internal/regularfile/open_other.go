//go:build !unix

package regularfile

// openNonBlocking: opening a named pipe does not block on this platform.
const openNonBlocking = 0
