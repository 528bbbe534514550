// Package approve is `agenthost pins approve`: tools' current definitions
// accepted into the lock file.
package approve

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// ApproveOptions are `pins approve`'s.
type ApproveOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx    context.Context
	Server string
	Tools  []string
	All    bool
}

// NewCmdApprove is `agenthost pins approve`; runF replaces approveRun
// (tests).
func NewCmdApprove(f *cmdutil.Factory, runF func(*ApproveOptions) error) *cobra.Command {
	opts := &ApproveOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "approve SERVER [TOOL...] | SERVER --all",
		Short: "Accept tools' current definitions into the lock file (shows what it accepts)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.Server, opts.Tools = cmd.Context(), args[0], args[1:]
			if len(opts.Tools) == 0 && !opts.All {
				return cmdutil.UsageErr(errors.New("name the tools to approve, or --all for every changed or new tool of the server"))
			}
			if len(opts.Tools) > 0 && opts.All {
				return cmdutil.UsageErr(errors.New("name tools or give --all, not both"))
			}
			return cmdutil.Run(opts, runF, approveRun)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "approve every changed or new tool of the server")
	return cmd
}

func approveRun(opts *ApproveOptions) error {
	f := opts.Factory
	h, names, failed, err := shared.Host(opts.Ctx, f, opts.Server)
	if err != nil {
		return err
	}
	if failed > 0 || len(names) == 0 {
		return cmdutil.Exit(cmdutil.ExitUnavailable)
	}
	approved, err := h.ApprovePins(opts.Server, opts.Tools...)
	if err != nil {
		return shared.Err(err)
	}
	for _, c := range approved {
		shared.WriteChange(f.IO.Out, c)
		fmt.Fprintf(f.IO.Out, "approved %s/%s\n", c.Server, c.Tool)
	}
	if len(approved) == 0 {
		fmt.Fprintln(f.IO.Out, "nothing to approve: the named tools match their pins")
	}
	return nil
}
