// Package diff is `agenthost pins diff`: how tool definitions differ from
// their pins (exit 10 when some do).
package diff

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// DiffOptions are `pins diff`'s.
type DiffOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx          context.Context
	Server, Tool string
}

// NewCmdDiff is `agenthost pins diff`; runF replaces diffRun (tests).
func NewCmdDiff(f *cmdutil.Factory, runF func(*DiffOptions) error) *cobra.Command {
	opts := &DiffOptions{Factory: f}
	return &cobra.Command{
		Use:   "diff [SERVER [TOOL]]",
		Short: "Show how tool definitions differ from their pins (exit 10 when some do)",
		Args:  cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx = cmd.Context()
			if len(args) > 0 {
				opts.Server = args[0]
			}
			if len(args) > 1 {
				opts.Tool = args[1]
			}
			return cmdutil.Run(opts, runF, diffRun)
		},
	}
}

func diffRun(opts *DiffOptions) error {
	f := opts.Factory
	h, names, failed, err := shared.Host(opts.Ctx, f, opts.Server)
	if err != nil {
		return err
	}
	shown := 0
	if len(names) > 0 {
		changes, err := h.PinChanges(names...)
		if err != nil {
			return shared.Err(err)
		}
		for _, c := range changes {
			if opts.Tool != "" && c.Tool != opts.Tool {
				continue
			}
			shared.WriteChange(f.IO.Out, c)
			shown++
		}
	}
	if shown == 0 {
		fmt.Fprintf(f.IO.Out, "every listed tool matches its pin (lock file: %s)\n", h.PinsFile())
	}
	switch {
	case failed > 0:
		return cmdutil.Exit(cmdutil.ExitUnavailable)
	case shown > 0:
		return cmdutil.Exit(cmdutil.ExitWouldAsk)
	}
	return nil
}
