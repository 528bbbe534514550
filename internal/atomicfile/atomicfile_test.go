package atomicfile

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		old     string // "" means no file before
		data    string
		perm    os.FileMode
		wantErr bool
	}{
		{name: "new file", path: "a.json", data: "{}\n", perm: 0o600},
		{name: "replaces, taking the new mode", path: "b.yaml", old: "old: 1\n", data: "new: 2\n", perm: 0o644},
		{name: "missing directory", path: filepath.Join("nope", "c"), data: "secret-canary", perm: 0o600, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.path)
			if tc.old != "" {
				if err := os.WriteFile(path, []byte(tc.old), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			err := Write(path, []byte(tc.data), tc.perm)
			if tc.wantErr {
				if err == nil || strings.Contains(err.Error(), tc.data) {
					t.Fatalf("Write = %v, want an error that does not quote the data", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != tc.data {
				t.Fatalf("content %q, %v; want %q", got, err, tc.data)
			}
			if runtime.GOOS != "windows" {
				if info, _ := os.Stat(path); info.Mode().Perm() != tc.perm {
					t.Errorf("mode %v, want %v", info.Mode().Perm(), tc.perm)
				}
			}
		})
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}
