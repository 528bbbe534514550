//go:build unix

package auditlog

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFIFOIsWrittenThroughTheFile: an audit path that is a FIFO (a log
// shipper reading it) is written through the *os.File, whose Write waits
// while the pipe is full; a bare write(2) on its non-blocking descriptor
// would fail with EAGAIN and make the sink's failure sticky.
func TestFIFOIsWrittenThroughTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s, err := OpenFileSink(path, FileSinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.fd != -1 {
		t.Fatalf("a FIFO is written through its descriptor (%d)", s.fd)
	}
	// More than a pipe holds (64 KiB), read only after a while: the
	// writes wait for the reader instead of failing.
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	read := make(chan int64, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = syscall.SetNonblock(int(r.Fd()), false)
		var n int64
		buf := make([]byte, 32<<10)
		for n < 200<<10 {
			m, err := r.Read(buf)
			if err != nil {
				break
			}
			n += int64(m)
		}
		read <- n
	}()
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	s.mu.Lock()
	for range 200 {
		if err := s.writeLocked(line); err != nil {
			s.mu.Unlock()
			t.Fatalf("write to a full FIFO: %v", err)
		}
	}
	s.mu.Unlock()
	if n := <-read; n < 200<<10 {
		t.Fatalf("the reader got %d bytes, want %d", n, 200<<10)
	}
}
