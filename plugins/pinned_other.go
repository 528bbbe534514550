//go:build !linux

package plugins

import (
	"io"
	"os"
)

// openMemfd: memfds are Linux-only; the caller uses a private file copy.
func openMemfd(io.Reader, os.FileMode, string, []byte) (*pinnedExe, error) { return nil, nil }
