package sibling

import (
	"errors"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

const fullPackage = "github.com/agenthost/agenthost/cmd/agenthost/agenthost-full"

func info() *debug.BuildInfo {
	return &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Path:      fullPackage,
		Main:      debug.Module{Path: "github.com/agenthost/agenthost", Version: "v1.2.3", Sum: "h1:main"},
		Deps: []*debug.Module{
			{Path: "github.com/mark3labs/mcp-go", Version: "v0.44.0", Sum: "h1:a"},
			{Path: "github.com/jackc/pgx/v5", Version: "v5.7.0", Sum: "h1:b"},
		},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "-tags", Value: ""}, {Key: "CGO_ENABLED", Value: "1"}},
	}
}

// Same accepts builds of the same module version, Go, settings and
// dependency versions (the full build links more modules than the lean
// one), and names the first difference otherwise.
func TestSame(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(b *debug.BuildInfo)
		wrong string
	}{
		{"same", func(*debug.BuildInfo) {}, ""},
		{"more modules", func(b *debug.BuildInfo) {
			b.Deps = append(b.Deps, &debug.Module{Path: "modernc.org/sqlite", Version: "v1.0.0"})
		}, ""},
		{"fewer modules", func(b *debug.BuildInfo) { b.Deps = b.Deps[:1] }, ""},
		{"another Go", func(b *debug.BuildInfo) { b.GoVersion = "go1.26.9" }, "go1.26.9"},
		{"another version", func(b *debug.BuildInfo) { b.Main.Version = "v1.2.4" }, "v1.2.4"},
		{"another revision", func(b *debug.BuildInfo) { b.Settings[0].Value = "def" }, "vcs.revision"},
		{"other tags", func(b *debug.BuildInfo) { b.Settings[1].Value = "failpoints" }, "-tags"},
		{"a dependency at another version", func(b *debug.BuildInfo) {
			b.Deps[0] = &debug.Module{Path: "github.com/mark3labs/mcp-go", Version: "v0.45.0", Sum: "h1:a"}
		}, "mcp-go"},
		{"a dependency replaced", func(b *debug.BuildInfo) {
			d := *b.Deps[1]
			d.Replace = &debug.Module{Path: "../pgx", Version: ""}
			b.Deps[1] = &d
		}, "pgx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			theirs := info()
			tc.edit(theirs)
			err := Same(info(), theirs)
			switch {
			case tc.wrong == "" && err != nil:
				t.Errorf("Same = %v, want nil", err)
			case tc.wrong != "" && (err == nil || !strings.Contains(err.Error(), tc.wrong)):
				t.Errorf("Same = %v, want an error naming %q", err, tc.wrong)
			}
		})
	}
}

// Open refuses a missing file, a shell script, a directory and a Go
// executable of another main package, with the errors callers branch on,
// and accepts this very test binary as what it is.
func TestOpen(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(filepath.Join(dir, "agenthost-full"), fullPackage); !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing file: %v, want ErrNotFound", err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f, err := Open(script, fullPackage); err == nil || errors.Is(err, ErrNotFound) {
		f.Close()
		t.Errorf("a shell script: %v, want it refused", err)
	}
	if f, err := Open(dir, fullPackage); !errors.Is(err, ErrNotRegular) {
		f.Close()
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		t.Fatal("no build information")
	}
	if f, err := Open(self, fullPackage); !errors.Is(err, ErrOtherBuild) || !strings.Contains(err.Error(), mine.Path) {
		f.Close()
		t.Errorf("another main package: %v, want ErrOtherBuild naming %s", err, mine.Path)
	}
	f, err := Open(self, mine.Path)
	if err != nil {
		t.Fatalf("this test binary as itself: %v", err)
	}
	defer f.Close()
	if p := ExecPath(f); p != f.Name() && !strings.HasPrefix(p, "/proc/self/fd/") {
		t.Errorf("ExecPath = %q", p)
	}
}
