//go:build unix

package childproc

import (
	"os"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// supervise runs c under proctree.Supervise, sandboxed by sb when sb is
// set: the supervisor sandboxes itself on the thread that starts the
// child (applySandbox), so the child starts sandboxed (under bubblewrap:
// inside bwrap); a sandbox that cannot be applied means no child at all.
func supervise(c proctree.Child, sb *Sandbox) int {
	if sb == nil {
		return proctree.Supervise(c)
	}
	if sb.Mechanism == MechanismBubblewrap {
		dir, _ := os.Getwd()
		c.Argv = bubblewrapArgs(sb, c.Path, c.Argv, dir, os.Geteuid() == 0)
		c.Path = sb.Bubblewrap
	}
	var sandboxed *applied
	c.Before = func() error {
		a, err := applySandbox(sb)
		sandboxed = a
		return err
	}
	c.After = func() { sandboxed.started() }
	return proctree.Supervise(c)
}
