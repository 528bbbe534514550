//go:build !linux

package childproc

import (
	"io"
	"os"
)

// openMemfd: memfds are Linux-only; the caller uses a private file copy.
func openMemfd(io.Reader, os.FileMode, string, []byte) (*Pinned, error) { return nil, nil }
