// Package shared is what the pins verbs share: the host connected to the
// servers named, the exit codes of pins failures and how a change prints.
package shared

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// Host loads the config, connects to the servers named (all when none)
// and reports those that could not be listed.
func Host(ctx context.Context, f *cmdutil.Factory, server string) (*host.Host, []string, int, error) {
	cfg, err := f.ConfigWith(server, "")
	if err != nil {
		return nil, nil, 0, err
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	names, failed := f.ConnectServers(ctx, h, server, " (its tools were not pinned or compared)")
	return h, names, failed, nil
}

// Err maps a pins failure to its exit code.
func Err(err error) error {
	switch {
	case errors.Is(err, host.ErrToolUnavailable), errors.Is(err, host.ErrServerUnavailable):
		return cmdutil.CodeErr(cmdutil.ExitUnavailable, err)
	case errors.Is(err, host.ErrUnknownServer):
		return cmdutil.UsageErr(err)
	}
	return cmdutil.CodeErr(cmdutil.ExitError, err)
}

// WriteChange prints a definition's change and its diff.
func WriteChange(w io.Writer, c host.PinChange) {
	what := "changed since pinned"
	if c.New {
		what = "new: not pinned"
	}
	fmt.Fprintf(w, "%s/%s: %s\n%s", c.Server, c.Tool, what, c.Diff)
}
