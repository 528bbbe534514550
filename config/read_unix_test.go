//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadRefusesWhatIsNotAConfigurationFile: a FIFO must not hang the
// open or the read, a device must not be read forever, and a huge file
// must not be read whole. Each case returns an error naming the file.
func TestLoadRefusesWhatIsNotAConfigurationFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dirYAML := filepath.Join(dir, "d.yaml")
	if err := os.Mkdir(dirYAML, 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"fifo", fifo, "is not a regular file (a named pipe)"},
		{"device", zero, "is not a regular file (a character device)"},
		{"too large", big, "is larger than 4 MiB"},
		{"directory", dirYAML, "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.path)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !errors.Is(err, ErrConfig) {
				t.Errorf("error %v is not a configuration error", err)
			}
			if !strings.HasPrefix(err.Error(), tc.path+": ") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %q, want the file name and %q", err, tc.want)
			}
		})
	}
}
