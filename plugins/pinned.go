package plugins

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// pinnedExe is a plugin executable whose bytes were checked against the
// pin and cannot change before they run. The check and the exec must not
// both go by path: a file (or a symlink) swapped between them would run an
// unpinned binary. So the bytes are read once, hashed while they are read,
// and the copy that was hashed is what runs.
type pinnedExe struct {
	// path is what to exec. For a memfd it is /proc/self/fd/3, which the
	// child resolves to extra (its fd 3) just before exec.
	path string
	// extra, when not nil, must be the child's fd 3 (exec.Cmd.ExtraFiles[0]).
	extra *os.File
	// cleanup releases the copy once the child has started (or failed to).
	cleanup func()
}

// errPinMismatch is the verified copy's hash differing from the pin.
type errPinMismatch struct {
	path string
	got  []byte
	want []byte
}

func (e *errPinMismatch) Error() string {
	return fmt.Sprintf("%s has sha256:%x but the config pins sha256:%x", e.path, e.got, e.want)
}

// usePrivateCopy makes openPinned skip the memfd (tests of the portable
// path on Linux).
var usePrivateCopy = false

// openPinned reads path into a private, sealed copy, hashing the bytes as
// it copies them, and returns the copy when its hash equals sum. On Linux
// the copy is a sealed memfd; where that is unavailable (other systems, or
// a kernel without memfd), a file in a fresh 0700 directory under tmpDir.
func openPinned(path string, sum []byte, tmpDir string) (*pinnedExe, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, &checksumReadError{err: err}
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, &checksumReadError{err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &checksumReadError{err: fmt.Errorf("%s is not a regular file", path)}
	}
	// Refused here, by the file's own name, rather than by an exec of the
	// copy (or inside a supervisor) with a name the operator never wrote.
	// (Windows has no executable bits.)
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o111 == 0 {
		return nil, &os.PathError{Op: "exec", Path: path, Err: syscall.EACCES}
	}
	if !usePrivateCopy {
		if exe, err := openMemfd(src, st.Mode().Perm(), path, sum); exe != nil || err != nil {
			return exe, err
		}
	}
	return openCopy(src, st.Mode().Perm(), path, sum, tmpDir)
}

// openCopy is the portable pinned copy: the executable is copied into a
// new 0700 directory (hashing while copying) and the copy is executed. Only
// this process's user can replace it, which is the user the plugin runs as.
func openCopy(src io.Reader, perm os.FileMode, path string, sum []byte, tmpDir string) (*pinnedExe, error) {
	dir, err := os.MkdirTemp(tmpDir, "exe-")
	if err != nil {
		return nil, &checksumReadError{err: fmt.Errorf("private copy: %w", err)}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, &checksumReadError{err: fmt.Errorf("private copy: %w", err)}
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	copyPath := filepath.Join(dir, filepath.Base(path))
	dst, err := os.OpenFile(copyPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		cleanup()
		return nil, &checksumReadError{err: fmt.Errorf("private copy: %w", err)}
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return nil, &checksumReadError{err: err}
	}
	if err := checkSum(h, path, sum); err != nil {
		cleanup()
		return nil, err
	}
	// Keep the file's executable bits (a non-executable plugin still fails
	// to exec), read-only, owner only.
	mode := os.FileMode(0o400)
	if perm&0o111 != 0 {
		mode = 0o500
	}
	if err := os.Chmod(copyPath, mode); err != nil {
		cleanup()
		return nil, &checksumReadError{err: fmt.Errorf("private copy: %w", err)}
	}
	return &pinnedExe{path: copyPath, cleanup: cleanup}, nil
}

func checkSum(h hash.Hash, path string, want []byte) error {
	got := h.Sum(nil)
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return &errPinMismatch{path: path, got: got, want: want}
	}
	return nil
}
