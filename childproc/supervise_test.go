//go:build unix

package childproc

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestRunnable(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "data")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	relative := exec.Command("./server")
	relative.Dir = dir
	tests := []struct {
		name string
		cmd  *exec.Cmd
		want bool
	}{
		{"absolute executable", exec.Command(exe), true},
		{"relative to Dir", relative, true},
		{"missing", exec.Command(filepath.Join(dir, "no-such-server")), false},
		{"not executable", exec.Command(plain), false},
		{"not on PATH", exec.Command("agenthost-surely-not-on-path"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Runnable(tt.cmd); got != tt.want {
				t.Fatalf("Runnable = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWrap(t *testing.T) {
	cmd := exec.Command("/bin/echo", "a", "b")
	cmd.ExtraFiles = []*os.File{os.Stdin}
	(&Supervisor{Path: "/sup"}).Wrap(cmd)
	want := []string{"/sup", SuperviseArg, "1", "/bin/echo", "/bin/echo", "a", "b"}
	if cmd.Path != "/sup" || !slices.Equal(cmd.Args, want) {
		t.Fatalf("Wrap: %s %q, want /sup %q", cmd.Path, cmd.Args, want)
	}
	var none *Supervisor
	cmd = exec.Command("/bin/echo")
	none.Wrap(cmd)
	if cmd.Path != "/bin/echo" {
		t.Fatalf("a nil Supervisor changed the command: %s", cmd.Path)
	}
}
