// Package list is `agenthost sessions list`: the saved sessions, the most
// recent first.
package list

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/savedsessions"
	"github.com/agenthost/agenthost/host/durable"
)

// ListOptions are `sessions list`'s.
type ListOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	JSON bool
	Here bool
}

// NewCmdList is `agenthost sessions list`; runF replaces listRun (tests).
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "The saved sessions, the most recent first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, listRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&opts.Here, "here", false, "only the sessions run in this folder")
	return cmd
}

func listRun(opts *ListOptions) error {
	out := opts.Factory.IO.Out
	store, err := savedsessions.Store(opts.Ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	lo := durable.ListOptions{}
	if opts.Here {
		lo.Dir, _ = os.Getwd()
	}
	list, err := store.Sessions(opts.Ctx, lo)
	if err != nil {
		return err
	}
	if opts.JSON {
		if list == nil {
			list = []durable.SessionInfo{}
		}
		return cmdutil.WriteJSONLine(out, list)
	}
	for _, s := range list {
		fmt.Fprintf(out, "%s  %s  %3d messages  %s  %s\n", s.ID, s.Updated.Local().Format(time.DateTime), s.Messages,
			cmdutil.Shown(out, s.Dir), cmdutil.Shown(out, s.Title))
	}
	return nil
}
