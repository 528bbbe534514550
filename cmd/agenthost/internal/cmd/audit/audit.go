// Package audit is `agenthost audit`: checks of the records kept in
// audit.store; its verbs are the packages below it.
package audit

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/audit/verify"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdAudit is `agenthost audit`.
func NewCmdAudit(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit records kept in audit.store",
		Long:  "Check the audit records kept in audit.store. Described in docs/audit.md and docs/cli.md.",
	}
	cmd.AddCommand(verify.NewCmdVerify(f, nil))
	return cmd
}
