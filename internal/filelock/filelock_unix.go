//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the flock(2) lock without waiting: false when another open
// file description holds it (another process, or another Lock in this one).
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		default:
			return false, err
		}
	}
}

// noFollow makes opening the lock file fail on a symbolic link.
const noFollow = syscall.O_NOFOLLOW

func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
