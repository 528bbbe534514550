//go:build unix

package childproc

import (
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLookPath(t *testing.T) {
	dir, bin := t.TempDir(), t.TempDir()
	exe := filepath.Join(bin, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	wd, _ := os.Getwd()
	tests := []struct {
		name, command, dir, want string
		wantErr                  bool
	}{
		{"absolute, as written", "/opt/mcp/bin/../../evil/x", "", "/opt/mcp/bin/../../evil/x", false},
		{"relative to dir", "./bin/server", dir, filepath.Join(dir, "bin/server"), false},
		{"relative, .. cleaned", "../x", dir, filepath.Join(filepath.Dir(dir), "x"), false},
		{"relative to the working directory without dir", "./x", "", filepath.Join(wd, "x"), false},
		{"bare name from PATH", "tool", dir, exe, false},
		{"bare name not on PATH", "agenthost-surely-missing", dir, "", true},
		{"empty", "", dir, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := LookPath(tt.command, tt.dir)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("LookPath(%q, %q) = %q, %v; want %q (error %v)", tt.command, tt.dir, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestOpenPinned runs a script from its pinned copy (memfd and portable
// copy): the interpreter reads the copy, and a file changed after the
// copy was made does not change what runs.
func TestOpenPinned(t *testing.T) {
	for _, portable := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "portable"}[portable], func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "s.sh")
			body := []byte("#!/bin/sh\necho pinned \"$@\"\n")
			if err := os.WriteFile(p, body, 0o755); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(body)
			pinned, err := OpenPinned(p, sum[:], PinOptions{TmpDir: dir, Portable: portable})
			if err != nil {
				t.Fatal(err)
			}
			defer pinned.Close()
			if err := os.WriteFile(p, []byte("#!/bin/sh\necho swapped\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(p, "x")
			if err := pinned.Apply(cmd); err != nil {
				t.Fatal(err)
			}
			out, err := cmd.Output()
			if err != nil || string(out) != "pinned x\n" {
				t.Fatalf("ran %q, %v; want the pinned script", out, err)
			}

			var mismatch *PinMismatchError
			if _, err := OpenPinned(p, sum[:], PinOptions{TmpDir: dir, Portable: portable}); !errors.As(err, &mismatch) {
				t.Fatalf("changed file: %v, want a PinMismatchError", err)
			}
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
			var pathErr *os.PathError
			if _, err := OpenPinned(p, sum[:], PinOptions{TmpDir: dir, Portable: portable}); !errors.As(err, &pathErr) || pathErr.Path != p {
				t.Fatalf("not executable: %v, want an error naming %s", err, p)
			}
			var readErr *PinReadError
			if _, err := OpenPinned(dir, sum[:], PinOptions{TmpDir: dir, Portable: portable}); !errors.As(err, &readErr) {
				t.Fatalf("a directory: %v, want a PinReadError", err)
			}
		})
	}
}

// A pinned file is copied whole, so its size is bounded, also when it
// grows while it is read.
func TestBoundedReader(t *testing.T) {
	src := strings.NewReader(strings.Repeat("x", 10))
	b := &boundedReader{r: src, left: 4}
	data, err := io.ReadAll(b)
	if err == nil || len(data) > 5 {
		t.Fatalf("read %d bytes past a bound of 4, err %v", len(data), err)
	}
	ok := &boundedReader{r: strings.NewReader("abcd"), left: 4}
	if data, err := io.ReadAll(ok); err != nil || string(data) != "abcd" {
		t.Fatalf("a file of exactly the bound: %q, %v", data, err)
	}
}
