//go:build unix

package writediff

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The diff of a write reads the file at the model's path: a named pipe, a
// device, a kernel file or a huge file shows no diff, and none of them
// hangs the caller or is read.
func TestOfBoundsTheFileItReads(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(dir, "status")
	if err := os.Symlink("/proc/self/status", status); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("x", MaxFile+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("old line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want, never string
	}{
		{"a regular file", notes, "+new line", ""},
		{"a relative path, from the server's cwd", "notes.txt", "-old line", ""},
		{"a file to create", filepath.Join(dir, "new.txt"), "+new line", ""},
		{"a named pipe", fifo, "is not a regular file (a named pipe): no diff shown", ""},
		{"a link to a device", zero, "no diff shown", ""},
		{"a link to a kernel file", status, "is a kernel file: no diff shown", "Name:"},
		{"the kernel file itself", "/proc/self/status", "is a kernel file: no diff shown", "Name:"},
		{"a huge file", big, "larger than 1,048,576 bytes: no diff shown", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"path": tc.path, "content": "new line\n"})
			done := make(chan Diff, 1)
			go func() { d, _ := Of(args, dir); done <- d }()
			var d Diff
			select {
			case d = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the diff hangs")
			}
			got := d.Note + d.Unified
			if !strings.Contains(got, tc.want) || (tc.never != "" && strings.Contains(got, tc.never)) {
				t.Errorf("diff\n%s\nwant %q", got, tc.want)
			}
		})
	}
}
