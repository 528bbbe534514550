// Package get is `agenthost mcp get`: one configured server, in detail.
package get

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// GetOptions are `mcp get`'s.
type GetOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	Name string
}

// NewCmdGet is `agenthost mcp get`; runF replaces the listing (tests).
func NewCmdGet(f *cmdutil.Factory, runF func(*GetOptions) error) *cobra.Command {
	opts := &GetOptions{Factory: f}
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show one configured server and its status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.Name = cmd.Context(), args[0]
			return cmdutil.Run(opts, runF, getRun)
		},
	}
}

func getRun(opts *GetOptions) error { return shared.Show(opts.Ctx, opts.Factory, opts.Name) }
