// Package list is `agenthost mcp list`: every configured server with its
// status.
package list

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// ListOptions are `mcp list`'s.
type ListOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx context.Context
}

// NewCmdList is `agenthost mcp list`; runF replaces the listing (tests).
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	return &cobra.Command{
		Use:   "list",
		Short: "Connect to every configured server and list it with its status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, listRun)
		},
	}
}

func listRun(opts *ListOptions) error { return shared.Show(opts.Ctx, opts.Factory, "") }
