package childproc

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
)

// Executables. Every file agenthost executes (stdio servers, credential
// plugins, hooks) is found by one rule (LookPath), so that what a policy
// or a pin checks is the file that runs; and a pinned file is executed
// from the one copy whose bytes were hashed (OpenPinned), never by its
// path again.

// LookPath is the absolute path of the file a command names, as agenthost
// executes it: an absolute path as it is written; a path with a separator
// joined to dir (the child's working directory; the current directory
// when dir is empty) and cleaned; a bare name searched in the host's
// PATH, as exec.Command does (a match relative to "." is refused, as exec
// does). Symlinks are not resolved: the kernel follows them at exec, or
// OpenPinned at its one open; a caller that matches the path against a
// policy resolves them (filepath.EvalSymlinks) and executes what matched.
func LookPath(command, dir string) (string, error) {
	if command == "" {
		return "", &exec.Error{Name: command, Err: exec.ErrNotFound}
	}
	if !strings.ContainsRune(command, filepath.Separator) && (runtime.GOOS != "windows" || !strings.ContainsRune(command, '/')) {
		p, err := exec.LookPath(command)
		if err != nil {
			return "", err
		}
		return filepath.Abs(p)
	}
	if filepath.IsAbs(command) {
		return command, nil
	}
	base := dir
	if base == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("resolving %s: %w", command, err)
		}
		base = wd
	}
	return filepath.Abs(filepath.Join(base, command))
}

// Pinned is a verified private copy of an executable: its bytes were read
// once, hashed while they were read, and cannot change before they run. A
// check and an exec that both went by path could be raced: a file (or a
// symlink) swapped between them would run unpinned bytes, and a `#!`
// script's interpreter opens the script by name a third time.
type Pinned struct {
	// Path is what to exec. For a memfd it is /proc/self/fd/3, which the
	// child resolves to its fd 3 (File) just before exec; a script's
	// interpreter is handed that name too, and opens the same sealed
	// bytes.
	Path string
	// File, when not nil, must become the child's fd 3: Apply does that.
	File *os.File

	cleanup func()
}

// PinnedFD is the child's descriptor of a memfd copy.
const PinnedFD = 3

// PinOptions tune OpenPinned.
type PinOptions struct {
	// TmpDir is where the portable copy's private directory is made
	// (os.TempDir when empty).
	TmpDir string
	// Portable makes the private file copy even where a sealed memfd is
	// available (tests of the portable path).
	Portable bool
}

// PinMismatchError is a verified copy whose SHA-256 is not the pin; the
// file was not executed.
type PinMismatchError struct {
	Path      string
	Got, Want []byte
}

func (e *PinMismatchError) Error() string {
	return fmt.Sprintf("%s has sha256:%x but the config pins sha256:%x", e.Path, e.Got, e.Want)
}

// PinReadError is a file that could not be read (or copied) to verify it.
type PinReadError struct{ Err error }

func (e *PinReadError) Error() string {
	return "cannot read the executable to verify it: " + e.Err.Error()
}
func (e *PinReadError) Unwrap() error { return e.Err }

// OpenPinned reads path into a private, sealed copy, hashing the bytes as
// it copies them, and returns the copy when its hash equals sum (else a
// *PinMismatchError; a file it cannot read is a *PinReadError). On Linux
// the copy is a sealed memfd; where that is unavailable (other systems, a
// kernel without memfd), a read-only file in a fresh 0700 directory under
// opts.TmpDir, which only this process's user can replace. A file without
// executable bits is refused by its own name (an *os.PathError), rather
// than by an exec of the copy with a name the operator never wrote.
// Close the copy once the child has started (or failed to).
func OpenPinned(path string, sum []byte, opts PinOptions) (*Pinned, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, &PinReadError{Err: err}
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return nil, &PinReadError{Err: err}
	}
	if !st.Mode().IsRegular() {
		return nil, &PinReadError{Err: fmt.Errorf("%s is not a regular file", path)}
	}
	// (Windows has no executable bits.)
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o111 == 0 {
		return nil, &os.PathError{Op: "exec", Path: path, Err: syscall.EACCES}
	}
	if st.Size() > MaxPinnedBytes {
		return nil, &PinReadError{Err: fmt.Errorf("%s is larger than %d bytes, the most a pinned file is copied", path, int64(MaxPinnedBytes))}
	}
	// Bounded again while copying: the file may grow after the Stat.
	r := &boundedReader{r: src, left: MaxPinnedBytes}
	if !opts.Portable {
		if p, err := openMemfd(r, st.Mode().Perm(), path, sum); p != nil || err != nil {
			return p, err
		}
	}
	return openCopy(r, st.Mode().Perm(), path, sum, opts.TmpDir)
}

// MaxPinnedBytes bounds the file OpenPinned copies (a hook, a plugin
// binary): what runs is copied whole into memory or a private file, so a
// file swapped for a huge one must not fill either.
const MaxPinnedBytes = 1 << 30

// boundedReader fails once more than left bytes are read.
type boundedReader struct {
	r    io.Reader
	left int64
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("the file grew past %d bytes while it was copied", int64(MaxPinnedBytes))
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("the file grew past %d bytes while it was copied", int64(MaxPinnedBytes))
	}
	return n, err
}

// Apply points cmd, which must not have extra files, at the copy: its
// Path, and the memfd as the child's fd 3. cmd.Args (argv[0] included)
// stay as they are.
func (p *Pinned) Apply(cmd *exec.Cmd) error {
	if len(cmd.ExtraFiles) != 0 {
		return errors.New("childproc: a pinned command cannot have other extra files")
	}
	cmd.Path = p.Path
	if p.File != nil {
		cmd.ExtraFiles = []*os.File{p.File}
	}
	return nil
}

// Close releases the copy. Safe to call more than once.
func (p *Pinned) Close() {
	if p != nil && p.cleanup != nil {
		p.cleanup()
		p.cleanup = nil
	}
}

// openCopy is the portable pinned copy: the executable is copied into a
// new 0700 directory (hashing while copying) and the copy is executed.
func openCopy(src io.Reader, perm os.FileMode, path string, sum []byte, tmpDir string) (*Pinned, error) {
	dir, err := os.MkdirTemp(tmpDir, "exe-")
	if err != nil {
		return nil, &PinReadError{Err: fmt.Errorf("private copy: %w", err)}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		_ = os.RemoveAll(dir)
		return nil, &PinReadError{Err: fmt.Errorf("private copy: %w", err)}
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	copyPath := filepath.Join(dir, filepath.Base(path))
	dst, err := os.OpenFile(copyPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		cleanup()
		return nil, &PinReadError{Err: fmt.Errorf("private copy: %w", err)}
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(dst, h), src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return nil, &PinReadError{Err: err}
	}
	if err := checkSum(h, path, sum); err != nil {
		cleanup()
		return nil, err
	}
	// Keep the file's executable bits, read-only, owner only.
	mode := os.FileMode(0o400)
	if perm&0o111 != 0 {
		mode = 0o500
	}
	if err := os.Chmod(copyPath, mode); err != nil {
		cleanup()
		return nil, &PinReadError{Err: fmt.Errorf("private copy: %w", err)}
	}
	return &Pinned{Path: copyPath, cleanup: cleanup}, nil
}

func checkSum(h hash.Hash, path string, want []byte) error {
	got := h.Sum(nil)
	if subtle.ConstantTimeCompare(got, want) != 1 {
		return &PinMismatchError{Path: path, Got: got, Want: want}
	}
	return nil
}
