// Package filelock owns advisory locks between processes on a file that is
// read, changed and written back (the OAuth token file), so that two
// agenthost processes cannot lose each other's change.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
)

// ErrUnsupported is returned on platforms without advisory file locks;
// callers go on without the lock (see Lock).
var ErrUnsupported = errors.New("filelock: advisory locks are not supported on this platform")

// ErrNotRegular is returned for a lock path that is a symbolic link or
// not a regular file: a link planted there must not make Lock create or
// open its target.
var ErrNotRegular = errors.New("filelock: the lock file is a symbolic link or not a regular file")

// Lock takes an exclusive advisory lock on path (created with mode 0600 if
// missing; it is a lock file, its content is never read) and returns the
// function that releases it. A symbolic link at path is not followed
// (ErrNotRegular). It waits for another holder,
// polling, until ctx ends. On platforms without advisory locks it returns
// ErrUnsupported and a release function that does nothing.
func Lock(ctx context.Context, path string) (release func(), err error) {
	// Checked before opening everywhere; on Unix-like systems noFollow
	// also closes the window between the check and the open.
	if isLink(path) {
		return func() {}, fmt.Errorf("filelock: open %s: %w", path, ErrNotRegular)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|noFollow, 0o600)
	if err != nil {
		if isLink(path) {
			err = ErrNotRegular
		}
		return func() {}, fmt.Errorf("filelock: open %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return func() {}, fmt.Errorf("filelock: open %s: %w", path, ErrNotRegular)
	}
	for delay := time.Millisecond; ; delay = min(2*delay, 50*time.Millisecond) {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			if errors.Is(err, ErrUnsupported) {
				return func() {}, err
			}
			return func() {}, fmt.Errorf("filelock: lock %s: %w", path, err)
		}
		if ok {
			return func() { unlockFile(f); f.Close() }, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return func() {}, fmt.Errorf("filelock: waiting for %s: %w", path, context.Cause(ctx))
		case <-t.C:
		}
	}
}

// isLink reports a symbolic link at path.
func isLink(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeSymlink != 0
}
