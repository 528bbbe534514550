// Package handover is how the lean build of the agenthost CLI
// (cmd/agenthost) gives a command line it cannot serve to the full build
// (cmd/agenthost/agenthost-full): it finds the full build beside its own
// executable, checks that it was built from the same module version and
// dependencies, and executes that very file in this process's place, with
// the same arguments, environment and file descriptors (docs/cli.md,
// "Two binaries").
package handover

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/sibling"
)

// FullName is the full build's executable name, and FullPackage its main
// package.
const (
	FullName    = "agenthost-full"
	FullPackage = "github.com/agenthost/agenthost/cmd/agenthost/agenthost-full"
)

// InstallHint says how to get both builds.
const InstallHint = "go install github.com/agenthost/agenthost/cmd/...@VERSION installs both (docs/cli.md, \"Two binaries\")"

// The errors Open's wrap, where they apply: no full build beside this
// executable, something other than a regular file there, or a full build
// of another version.
var (
	ErrNotFound   = sibling.ErrNotFound
	ErrNotRegular = sibling.ErrNotRegular
	ErrOtherBuild = sibling.ErrOtherBuild
)

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
	path, err := sibling.Beside(FullName)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	f, err := Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	argv := append([]string{FullName}, args...)
	// The file checked is the file run (sibling.ExecPath).
	return fmt.Errorf("execute %s: %w", f.Name(), syscall.Exec(sibling.ExecPath(f), argv, os.Environ()))
}

// Open opens the full build at path and checks it (sibling.Open); the
// caller closes it. Its errors wrap ErrNotFound, ErrNotRegular and
// ErrOtherBuild.
func Open(path string) (*os.File, error) {
	f, err := sibling.Open(path, FullPackage)
	switch {
	case errors.Is(err, sibling.ErrNotFound):
		return nil, fmt.Errorf("the full build of agenthost, %s, is %w", FullName, err)
	case errors.Is(err, sibling.ErrNotRegular):
		return nil, fmt.Errorf("the full build of agenthost is %w", err)
	case errors.Is(err, sibling.ErrOtherBuild):
		return nil, fmt.Errorf("the full build of agenthost beside this executable was %w", err)
	}
	return f, err
}
