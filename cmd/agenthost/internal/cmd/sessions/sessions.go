// Package sessions is `agenthost sessions`: the saved sessions of `run`
// listed, shown and deleted; its verbs are the packages below it.
package sessions

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/sessions/delete"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/sessions/list"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/sessions/show"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdSessions is `agenthost sessions`.
func NewCmdSessions(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   cmdutil.SessionsUse,
		Short: cmdutil.SessionsShort,
	}
	cmd.AddCommand(list.NewCmdList(f, nil), show.NewCmdShow(f, nil), delete.NewCmdDelete(f, nil))
	return cmd
}
