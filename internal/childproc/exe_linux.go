package childproc

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// openMemfd copies src into a memfd while hashing it, checks the hash,
// seals the memfd against any further change and returns it. It returns
// (nil, nil) when memfds (or /proc) are unavailable, before reading src, so
// the caller falls back to a private file copy.
func openMemfd(src io.Reader, perm os.FileMode, path string, sum []byte) (*Pinned, error) {
	// The memfd is reopened read-only, and executed, through /proc.
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return nil, nil
	}
	fd, err := unix.MemfdCreate("agenthost-pinned", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
			return nil, nil
		}
		return nil, &PinReadError{Err: fmt.Errorf("memfd: %w", err)}
	}
	mem := os.NewFile(uintptr(fd), "agenthost-pinned")
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(mem, h), src); err != nil {
		_ = mem.Close()
		return nil, &PinReadError{Err: err}
	}
	if err := checkSum(h, path, sum); err != nil {
		_ = mem.Close()
		return nil, err
	}
	// Keep the file's executable bits: a file that is not executable
	// still fails to exec, as it would by path.
	if err := mem.Chmod(perm & 0o555); err != nil {
		_ = mem.Close()
		return nil, &PinReadError{Err: fmt.Errorf("memfd: %w", err)}
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		_ = mem.Close()
		return nil, &PinReadError{Err: fmt.Errorf("seal memfd: %w", err)}
	}
	// The child gets a read-only descriptor of the sealed bytes, not the
	// writable one this process created.
	ro, err := os.OpenFile(fmt.Sprintf("/proc/self/fd/%d", mem.Fd()), os.O_RDONLY|unix.O_CLOEXEC, 0)
	_ = mem.Close()
	if err != nil {
		return nil, &PinReadError{Err: fmt.Errorf("reopen memfd: %w", err)}
	}
	return &Pinned{
		Path:    fmt.Sprintf("/proc/self/fd/%d", PinnedFD),
		File:    ro,
		cleanup: func() { _ = ro.Close() },
	}, nil
}
