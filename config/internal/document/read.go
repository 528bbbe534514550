package document

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/regularfile"
)

// MaxFileBytes bounds a configuration file. Real configurations are a few
// kilobytes; the bound keeps a mistaken path (a log, a device) from being
// read into memory whole.
const MaxFileBytes = 4 << 20

// ReadFile reads a configuration file of at most MaxFileBytes. It
// refuses anything but a regular file: a FIFO would block the open or the
// read forever, and a device such as /dev/zero never ends (see
// regularfile.Read, which also keeps the open from blocking and checks the
// open descriptor, so the file read is the file checked).
func ReadFile(path string) ([]byte, error) {
	data, err := regularfile.Read(path, MaxFileBytes)
	var notRegular *regularfile.NotRegularError
	switch {
	case err == nil:
		return data, nil
	case errors.As(err, &notRegular) && notRegular.Mode.IsDir():
		return nil, &problem.Error{File: path, Msg: "is a directory, not a configuration file"}
	case errors.As(err, &notRegular):
		return nil, &problem.Error{File: path, Msg: fmt.Sprintf("is not a regular file (%s), not a configuration file", regularfile.Kind(notRegular.Mode))}
	case errors.Is(err, regularfile.ErrTooLarge):
		return nil, &problem.Error{File: path, Msg: fmt.Sprintf("is larger than %d MiB; a configuration file is expected", MaxFileBytes>>20)}
	default:
		return nil, &problem.Error{File: path, Msg: "cannot read configuration: " + DescribeReadError(err), Err: err}
	}
}

// DescribeReadError is err without the path an *fs.PathError puts in front
// (the message names the file already).
func DescribeReadError(err error) string {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err.Error()
	}
	return err.Error()
}
