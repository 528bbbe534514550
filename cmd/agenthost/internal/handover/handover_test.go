package handover

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Open refuses a file that is not there, and one that is not a Go
// executable, with the errors callers branch on.
func TestOpenRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, FullName)); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing file: %v, want ErrNotFound", err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(script); err == nil || errors.Is(err, ErrNotFound) {
		f.Close()
		t.Errorf("a shell script: %v, want it refused", err)
	}
	if f, err := Open(dir); !errors.Is(err, ErrNotRegular) {
		f.Close()
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
}
