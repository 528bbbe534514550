// Package approvals is `agenthost approvals`: list, show and vote on the
// approval requests of approvals.store; its verbs are the packages below.
package approvals

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/list"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/show"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/vote"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdApprovals is `agenthost approvals`.
func NewCmdApprovals(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, show and vote on approval requests in approvals.store (any replica's)",
		Long: "List, show and vote on the approval requests kept in approvals.store, whichever replica raised them.\n" +
			"Described in docs/cli.md.",
	}
	cmd.AddCommand(list.NewCmdList(f, nil), show.NewCmdShow(f, nil), vote.NewCmdVote(f, true, nil), vote.NewCmdVote(f, false, nil))
	return cmd
}
