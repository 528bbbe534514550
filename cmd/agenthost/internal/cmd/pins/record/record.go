// Package record is `agenthost pins record` (and `agenthost pins`): every
// tool definition not pinned yet recorded in the lock file.
package record

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// RecordOptions are `pins record`'s.
type RecordOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx    context.Context
	Server string
}

// NewCmdRecord is `agenthost pins record`; runF replaces RecordRun (tests).
func NewCmdRecord(f *cmdutil.Factory, runF func(*RecordOptions) error) *cobra.Command {
	opts := &RecordOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "record",
		Short: "The same as `agenthost pins`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, RecordRun)
		},
	}
	AddFlags(cmd, opts)
	return cmd
}

// AddFlags adds record's flags to cmd (record's and `pins`' own).
func AddFlags(cmd *cobra.Command, opts *RecordOptions) {
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server")
}

// RecordRun pins what is not pinned yet and names what changed.
func RecordRun(opts *RecordOptions) error {
	f := opts.Factory
	h, names, failed, err := shared.Host(opts.Ctx, f, opts.Server)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		recorded, err := h.RecordPins(names...)
		if err != nil {
			return shared.Err(err)
		}
		for _, c := range recorded {
			fmt.Fprintf(f.IO.Out, "pinned %s/%s\n", c.Server, c.Tool)
		}
		changes, err := h.PinChanges(names...)
		if err != nil {
			return shared.Err(err)
		}
		for _, c := range changes {
			fmt.Fprintf(f.IO.Out, "changed since pinned, not re-pinned: %s/%s (review: agenthost pins diff %s %s)\n", c.Server, c.Tool, c.Server, c.Tool)
		}
		fmt.Fprintf(f.IO.Out, "lock file: %s (%d newly pinned)\n", h.PinsFile(), len(recorded))
	}
	if failed > 0 {
		return cmdutil.Exit(cmdutil.ExitUnavailable)
	}
	return nil
}
