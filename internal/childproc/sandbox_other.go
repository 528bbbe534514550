//go:build !linux

package childproc

import "fmt"

func kernelLandlockABI() int { return 0 }

func isRoot() bool { return false }

func systemReadPaths() []string { return nil }

func pidsCgroupAvailable() bool { return false }

type applied struct{}

func (*applied) started() {}

// applySandbox: Landlock is Linux's; check refuses every sandbox here.
func applySandbox(sb *Sandbox) (*applied, error) {
	if _, err := sb.check(0); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("%w: not supported on this system", ErrSandboxUnavailable)
}

// ReleaseSandbox: there is nothing to release outside Linux.
func ReleaseSandbox(int) {}
