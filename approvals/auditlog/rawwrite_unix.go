//go:build unix

package auditlog

import (
	"os"
	"syscall"
)

// rawFD is f's descriptor, for writeFD; -1 when it cannot be had, and
// for anything but a regular file: a FIFO or a device is non-blocking
// under the runtime's poller, where a bare write(2) would fail with EAGAIN
// instead of waiting as the *os.File's Write does.
// info is f's stat, as the sink took it on opening f.
func rawFD(f *os.File, info os.FileInfo) int {
	if info == nil || !info.Mode().IsRegular() {
		return -1
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if err := rc.Control(func(d uintptr) { fd = int(d) }); err != nil {
		return -1
	}
	return fd
}

// writeFD is one write(2) of b to fd (again only when interrupted before
// it wrote anything), without the os.File's own locking and retry loop:
// the sink holds its lock, and a short write is the sink's to handle
// (writeLocked), never completed by a second write. It is as many bytes as
// a *os.File's Write reports for a write(2) that writes everything.
func writeFD(fd int, b []byte) (int, error) {
	for {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return max(n, 0), err
		}
		return n, nil
	}
}
