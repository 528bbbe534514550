//go:build !unix

package filelock

import "os"

func tryLock(*os.File) (bool, error) { return false, ErrUnsupported }

func unlockFile(*os.File) {}
