package config

import (
	"fmt"
	"io"
	"os"
)

// MaxFileBytes bounds a configuration file. Real configurations are a few
// kilobytes; the bound keeps a mistaken path (a log, a device) from being
// read into memory whole.
const MaxFileBytes = 4 << 20

// readConfigFile reads a configuration file of at most MaxFileBytes. It
// refuses anything but a regular file: a FIFO would block the open or the
// read forever, and a device such as /dev/zero never ends. The file is
// opened without blocking (a FIFO with no writer would otherwise hang in
// open) and checked with fstat on the open descriptor, so the file read is
// the file checked.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openNonBlocking, 0)
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read configuration: " + describeReadError(err), Err: err}
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read configuration: " + describeReadError(err), Err: err}
	}
	switch {
	case info.IsDir():
		return nil, &Error{File: path, Msg: "is a directory, not a configuration file"}
	case !info.Mode().IsRegular():
		return nil, &Error{File: path, Msg: fmt.Sprintf("is not a regular file (%s), not a configuration file", fileKind(info.Mode()))}
	case info.Size() > MaxFileBytes:
		return nil, tooLarge(path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: "cannot read configuration: " + describeReadError(err), Err: err}
	}
	if len(data) > MaxFileBytes { // grew after the fstat
		return nil, tooLarge(path)
	}
	return data, nil
}

func tooLarge(path string) error {
	return &Error{File: path, Msg: fmt.Sprintf("is larger than %d MiB; a configuration file is expected", MaxFileBytes>>20)}
}

// fileKind names a non-regular file mode for an error message.
func fileKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "a special file"
	}
}
