//go:build unix

package handover

import (
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// A FIFO named as the full build is refused at once: opening it must not
// wait for a writer (the test would hang here if it did).
func TestOpenRefusesFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), FullName)
	if err := syscall.Mkfifo(fifo, 0o755); err != nil {
		t.Fatalf("mkfifo: %v", err)
	}
	f, err := Open(fifo)
	if !errors.Is(err, ErrNotRegular) {
		f.Close()
		t.Fatalf("a FIFO: %v, want ErrNotRegular", err)
	}
}
