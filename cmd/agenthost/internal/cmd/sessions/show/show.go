// Package show is `agenthost sessions show`: a saved session's
// conversation.
package show

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/savedsessions"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/model"
)

// ShowOptions are `sessions show`'s.
type ShowOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	ID   string
	JSON bool
}

// Report is `sessions show --json`: the session's line and its
// conversation.
type Report struct {
	durable.SessionInfo
	Conversation []model.Message `json:"conversation"`
}

// NewCmdShow is `agenthost sessions show`; runF replaces showRun (tests).
func NewCmdShow(f *cmdutil.Factory, runF func(*ShowOptions) error) *cobra.Command {
	opts := &ShowOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "A saved session's conversation (what the model saw and said)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.ID = cmd.Context(), args[0]
			return cmdutil.Run(opts, runF, showRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func showRun(opts *ShowOptions) error {
	out := opts.Factory.IO.Out
	store, err := savedsessions.Store(opts.Ctx)
	if err != nil {
		return err
	}
	defer store.Close()
	info, err := store.Session(opts.Ctx, opts.ID)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	msgs, err := store.Load(opts.Ctx, opts.ID)
	if err != nil {
		return err
	}
	if opts.JSON {
		return cmdutil.WriteJSONLine(out, Report{info, msgs})
	}
	for _, m := range msgs {
		line := m.Content
		for _, tc := range m.ToolCalls {
			line = strings.TrimSpace(line + " " + tc.Name + " " + tc.Arguments)
		}
		fmt.Fprintf(out, "%s: %s\n", m.Role, cmdutil.Shown(out, line))
	}
	return nil
}
