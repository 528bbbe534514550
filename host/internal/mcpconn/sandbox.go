package mcpconn

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/childproc"
)

// sandboxEnforcement is what a server's snapshots report about its
// sandbox: nil for a server reached by url; mode off; or, under enforce,
// what this kernel enforces (a sandbox it cannot apply fails the start
// with the reason, and the report still names the ABI found).
func sandboxEnforcement(cfg *config.Server, sb config.Sandbox) *childproc.Enforcement {
	if cfg.Command == "" {
		return nil
	}
	off := &childproc.Enforcement{Mode: childproc.ModeOff, Mechanism: "none"}
	if !sb.Enforced() {
		return off
	}
	child, err := sb.Child(cfg.Cwd)
	if err != nil || child == nil {
		return off
	}
	e, err := child.Check()
	if err != nil {
		e.Mechanism = "none"
	}
	return &e
}

// sandboxed makes cmd start under the server's sandbox, through the
// supervisor, or returns why it must not start at all: a sandboxed server
// never starts unsandboxed.
func (c *Conn) sandboxed(cmd *exec.Cmd) error {
	sb, err := c.sandbox.Child(c.cfg.Cwd)
	if err != nil {
		return fmt.Errorf("server %s: sandbox: %w", c.name, err)
	}
	if cmd.Err == nil && !childproc.Runnable(cmd) {
		return fmt.Errorf("server %s: command %q is not an executable file", c.name, c.cfg.Command)
	}
	cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
	if _, err := c.supervisor.WrapSandboxed(cmd, sb); err != nil {
		if errors.Is(err, childproc.ErrNoSupervisor) || errors.Is(err, childproc.ErrSandboxUnavailable) {
			return fmt.Errorf("server %s not started: %w", c.name, err)
		}
		return err
	}
	return nil
}
