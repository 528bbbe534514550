// Package pins is `agenthost pins`: record, review and approve pinned
// tool definitions (docs/cli.md); its verbs are the packages below it.
package pins

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/approve"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/diff"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins/record"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdPins is `agenthost pins`: by itself, `pins record`.
func NewCmdPins(f *cmdutil.Factory) *cobra.Command {
	opts := &record.RecordOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "pins",
		Short: "Pin every tool definition not pinned yet in the lock file (agenthost.lock next to the config)",
		Long: "Records the hash of each tool's definition (name, description, inputSchema, secureInputSchema,\n" +
			"annotations) that the lock file does not know yet. Changed definitions are not re-pinned: review\n" +
			"them with `agenthost pins diff` and accept them with `agenthost pins approve`. With pins.enabled in\n" +
			"the config, a changed definition is hidden from the model and its calls refused until then.\n" +
			"Details: docs/cli.md and docs/config.md.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return record.RecordRun(opts)
		},
	}
	record.AddFlags(cmd, opts)
	cmd.AddCommand(record.NewCmdRecord(f, nil), diff.NewCmdDiff(f, nil), approve.NewCmdApprove(f, nil))
	return cmd
}
