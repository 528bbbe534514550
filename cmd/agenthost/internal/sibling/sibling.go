// Package sibling owns the agenthost CLI's other executables beside the
// running one: where one is looked for (beside this executable, symbolic
// links resolved), what it must be to be run (a regular file, a Go
// executable of the expected main package, built as this one was: Same),
// and that the file checked is the file run (Open keeps it open, and
// ExecPath names that descriptor on Linux). The full build the lean one
// hands a command line over to (package handover) and the small child
// supervisor (cmdutil.Factory) are both found this way (docs/cli.md,
// "Two binaries").
package sibling

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
)

// ErrNotFound says there is no such executable beside this one.
var ErrNotFound = errors.New("not beside this executable")

// ErrNotRegular says the path names something other than a regular file
// (a FIFO, a device, a directory).
var ErrNotRegular = errors.New("not a regular file")

// ErrOtherBuild says the executable there was built from another version,
// with other settings, or is another program.
var ErrOtherBuild = errors.New("built from another version")

// Beside is the path name would have beside this executable, with
// symbolic links resolved; the error wraps ErrNotFound.
func Beside(name string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	return filepath.Join(filepath.Dir(self), name), nil
}

// Open opens the executable at path and checks that it is a regular file
// holding the main package pkg built as this executable was (Same); the
// caller closes it. The file is opened without blocking, so a FIFO in its
// place is refused at once instead of holding the caller until something
// writes to it. The errors wrap ErrNotFound, ErrNotRegular or
// ErrOtherBuild where those apply.
func Open(path, pkg string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w (looked for %s)", ErrNotFound, path)
	}
	if err != nil {
		return nil, err
	}
	if err := check(f, path, pkg); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func check(f *os.File, path, pkg string) error {
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%w (%s is %v)", ErrNotRegular, path, fi.Mode().Type())
	}
	theirs, err := buildinfo.Read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mine, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("this executable has no build information")
	}
	if theirs.Path != pkg {
		return fmt.Errorf("%w (%s): it is %s", ErrOtherBuild, path, theirs.Path)
	}
	if err := Same(mine, theirs); err != nil {
		return fmt.Errorf("%w (%s): %v", ErrOtherBuild, path, err)
	}
	return nil
}

// ExecPath is the path that executes the file f holds open: on Linux its
// descriptor (/proc/self/fd/N), so a file replaced after Open is not the
// one run; elsewhere its name. Valid while f is open, in this process and
// in a child that inherits the descriptor until its exec.
func ExecPath(f *os.File) string {
	if runtime.GOOS == "linux" {
		return "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	}
	return f.Name()
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
