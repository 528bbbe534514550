// Package regularfile owns reading a file whose path someone else chose (a
// user's --config, a path in a model's tool call) without letting the path
// hang or flood the reader: only a regular file is read, checked before the
// open and again on the opened descriptor, the open cannot block on a named
// pipe, and at most a bound of bytes is read.
package regularfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrTooLarge is returned for a file larger than the bound.
var ErrTooLarge = errors.New("the file is larger than the bound")

// NotRegularError is returned for a path that names something other than a
// regular file (after following symbolic links).
type NotRegularError struct {
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string { return "not a regular file (" + Kind(e.Mode) + ")" }

// Kind names a file mode that is not a regular file's, for a message.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}

// Read reads the regular file at path, of at most max bytes. Anything else
// (a directory, a named pipe, a device, a socket, also behind a symbolic
// link) is a *NotRegularError, found by a stat before the open, so that a
// device is never opened, and checked again with fstat on the opened
// descriptor, so that the file read is the file checked. The open does not
// block (a named pipe swapped in between would otherwise block it with no
// writer). A larger file is ErrTooLarge. It reads at most the size fstat
// reported: what is appended later is not read, and a kernel pseudo-file
// (procfs reports size 0, and some such files block a read) reads as empty.
// Errors from the file system are returned as they are (*fs.PathError).
func Read(path string, max int64) ([]byte, error) {
	if info, err := os.Stat(path); err != nil {
		return nil, err
	} else if err := check(info, max); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlocking, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := check(info, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, info.Size()))
	if err != nil {
		return nil, err
	}
	return data, nil
}

func check(info fs.FileInfo, max int64) error {
	if !info.Mode().IsRegular() {
		return &NotRegularError{Mode: info.Mode()}
	}
	if info.Size() > max {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, max)
	}
	return nil
}
