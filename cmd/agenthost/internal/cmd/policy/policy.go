// Package policy is `agenthost policy`: explain a decision, print a
// catalogue, classify the tools into an approvals block (its verbs are the
// packages below it).
package policy

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/policy/catalogue"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/policy/explain"
	initcmd "github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/policy/init"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdPolicy is `agenthost policy`.
func NewCmdPolicy(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Explain approval decisions and infer a reviewable risk catalogue",
	}
	cmd.AddCommand(explain.NewCmdExplain(f, nil), catalogue.NewCmdCatalogue(f, nil), initcmd.NewCmdInit(f, nil))
	return cmd
}
