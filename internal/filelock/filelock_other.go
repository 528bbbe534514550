//go:build !unix

package filelock

import "os"

func tryLock(*os.File) (bool, error) { return false, ErrUnsupported }

func unlockFile(*os.File) {}

// noFollow: no such open flag here; Lock checks for a link before it
// opens.
const noFollow = 0
