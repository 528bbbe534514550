//go:build unix

package regularfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Read refuses, without hanging, what is not a regular file of at most the
// bound, also behind a symbolic link, and reads a regular one whole.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	small, big := write("small", "hello\n"), write("big", strings.Repeat("x", 101))
	for _, tc := range []struct {
		name, path, want string
		wantErr          error // nil: want is the content
		notRegular       string
	}{
		{name: "regular", path: small, want: "hello\n"},
		{name: "link to a regular file", path: link("to-small", small), want: "hello\n"},
		{name: "empty", path: write("empty", ""), want: ""},
		{name: "named pipe", path: fifo, notRegular: "a named pipe"},
		{name: "link to a named pipe", path: link("to-fifo", fifo), notRegular: "a named pipe"},
		{name: "link to a device", path: link("to-zero", "/dev/zero"), notRegular: "a character device"},
		{name: "directory", path: dir, notRegular: "a directory"},
		{name: "too large", path: big, wantErr: ErrTooLarge},
		{name: "missing", path: filepath.Join(dir, "missing"), wantErr: fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			var data []byte
			var err error
			go func() { defer close(done); data, err = Read(tc.path, 100) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read hangs")
			}
			var nr *NotRegularError
			switch {
			case tc.notRegular != "":
				if !errors.As(err, &nr) || Kind(nr.Mode) != tc.notRegular {
					t.Errorf("error %v, want not a regular file (%s)", err, tc.notRegular)
				}
			case tc.wantErr != nil:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
			case err != nil || string(data) != tc.want:
				t.Errorf("Read = %q, %v; want %q", data, err, tc.want)
			}
		})
	}
}

// A kernel pseudo-file reports size 0 and may never end or block a read: it
// reads as what fstat promised, nothing.
func TestReadStopsAtTheReportedSize(t *testing.T) {
	const pseudo = "/proc/self/status" // size 0, content not empty
	if _, err := os.Stat(pseudo); err != nil {
		t.Skip("no procfs here")
	}
	data, err := Read(pseudo, 1<<20)
	if err != nil || len(data) != 0 {
		t.Errorf("Read(%s) = %d bytes, %v; want 0 bytes", pseudo, len(data), err)
	}
}
