// Package handover is how the lean build of the agenthost CLI
// (cmd/agenthost) gives a command line it cannot serve to the full build
// (cmd/agenthost/agenthost-full): it finds the full build beside its own
// executable, checks that it was built from the same module version and
// dependencies, and executes that very file in this process's place, with
// the same arguments, environment and file descriptors (docs/cli.md,
// "Two binaries").
package handover

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// FullName is the full build's executable name, and FullPackage its main
// package.
const (
	FullName    = "agenthost-full"
	FullPackage = "github.com/agenthost/agenthost/cmd/agenthost/agenthost-full"
)

// InstallHint says how to get both builds.
const InstallHint = "go install github.com/agenthost/agenthost/cmd/...@VERSION installs both (docs/cli.md, \"Two binaries\")"

// ErrNotFound says there is no full build beside this executable.
var ErrNotFound = errors.New("the full build of agenthost, " + FullName + ", is not beside this executable")

// ErrOtherBuild says the full build beside this executable was built from
// another version.
var ErrOtherBuild = errors.New("the full build of agenthost beside this executable was built from another version")

// Exec runs the full build in this process's place with args (the
// command line without the program's name); it returns only when it
// could not, with the exit code after printing why on stderr.
func Exec(args []string) func(*cmdutil.NeedsFullError) int {
	return func(nf *cmdutil.NeedsFullError) int {
		err := exec(args)
		fmt.Fprintf(os.Stderr, "agenthost: %v: %v; %s\n", nf, err, InstallHint)
		return cmdutil.ExitUsage
	}
}

// exec finds, checks and executes the full build; it returns only on
// failure.
func exec(args []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	f, err := Open(filepath.Join(filepath.Dir(self), FullName))
	if err != nil {
		return err
	}
	defer f.Close()
	argv := append([]string{FullName}, args...)
	// The file checked is the file run: on Linux it is executed through
	// the descriptor it was read from, so a file replaced in between is
	// not the one run.
	path := f.Name()
	if runtime.GOOS == "linux" {
		path = "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	return fmt.Errorf("execute %s: %w", f.Name(), syscall.Exec(path, argv, os.Environ()))
}

// ErrNotRegular says the path of the full build names something other
// than a regular file (a FIFO, a device, a directory).
var ErrNotRegular = errors.New("the full build of agenthost is not a regular file")

// Open opens the full build at path and checks that it is a regular file
// built as this executable was (Same); the caller closes it. The file is
// opened without blocking, so a FIFO in its place is refused at once
// instead of holding the command until something writes to it.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (looked for %s)", ErrNotFound, path)
	}
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w (%s is %v)", ErrNotRegular, path, fi.Mode().Type())
	}
	theirs, err := buildinfo.Read(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		f.Close()
		return nil, errors.New("this executable has no build information")
	}
	if theirs.Path != FullPackage {
		f.Close()
		return nil, fmt.Errorf("%w (%s): it is %s", ErrOtherBuild, path, theirs.Path)
	}
	if err := Same(mine, theirs); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (%s): %v", ErrOtherBuild, path, err)
	}
	return f, nil
}

// Same reports (nil) that two executables were built from the same
// module at the same version or revision, by the same Go, with the same
// build settings and the same version of every module both link.
func Same(a, b *debug.BuildInfo) error {
	if a.GoVersion != b.GoVersion {
		return fmt.Errorf("built by %s, this one by %s", b.GoVersion, a.GoVersion)
	}
	if a.Main.Path != b.Main.Path || a.Main.Version != b.Main.Version || a.Main.Sum != b.Main.Sum {
		return fmt.Errorf("module %s %s, this one %s %s", b.Main.Path, b.Main.Version, a.Main.Path, a.Main.Version)
	}
	settings := func(bi *debug.BuildInfo) map[string]string {
		m := map[string]string{}
		for _, s := range bi.Settings {
			m[s.Key] = s.Value
		}
		return m
	}
	sa, sb := settings(a), settings(b)
	for _, k := range []string{"vcs.revision", "vcs.time", "vcs.modified", "-tags", "-ldflags", "CGO_ENABLED", "GOOS", "GOARCH", "-trimpath", "-race"} {
		if sa[k] != sb[k] {
			return fmt.Errorf("%s %q, this one %q", k, sb[k], sa[k])
		}
	}
	deps := map[string]*debug.Module{}
	for _, d := range a.Deps {
		deps[d.Path] = d
	}
	for _, d := range b.Deps {
		if mine, ok := deps[d.Path]; ok && (moduleOf(mine) != moduleOf(d)) {
			return fmt.Errorf("%s %s, this one %s", d.Path, moduleOf(d), moduleOf(mine))
		}
	}
	return nil
}

// moduleOf is a dependency's version as linked: its replacement's when
// replaced.
func moduleOf(m *debug.Module) string {
	if m.Replace != nil {
		m = m.Replace
	}
	return m.Path + "@" + m.Version + " " + m.Sum
}
