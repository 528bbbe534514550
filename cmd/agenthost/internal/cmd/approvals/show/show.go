// Package show is `agenthost approvals show`: one request in detail.
package show

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// ShowOptions are `approvals show`'s.
type ShowOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	ID   string
	JSON bool
}

// NewCmdShow is `agenthost approvals show`; runF replaces showRun (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request with its arguments, risk and votes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.ID = cmd.Context(), args[0]
			return cmdutil.Run(opts, runF, showRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the approval object (docs/cli.md)")
	return cmd
}

func showRun(opts *ShowOptions) error {
	f := opts.Factory
	s, err := shared.OpenStore(opts.Ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := s.Get(opts.Ctx, opts.ID)
	if err != nil {
		return shared.VoteErr(err)
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	shared.PrintApproval(f.IO.Out, p)
	return nil
}
