// Package verify is `agenthost audit verify`: the hash chains of
// audit.store checked (compose.VerifyAudit), each chain's verdict printed.
package verify

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

// VerifyOptions are `audit verify`'s.
type VerifyOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	JSON bool
}

// NewCmdVerify is `agenthost audit verify`; runF replaces verifyRun (tests).
func NewCmdVerify(f *cmdutil.Factory, runF func(*VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the hash chain(s) of audit.store and name the first broken record",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, verifyRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array of {chain, records, broken: {chain, seq, reason} | null}")
	return cmd
}

func verifyRun(opts *VerifyOptions) error {
	f := opts.Factory
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	chainKey, err := host.AuditChainKey(cfg, nil)
	if err != nil {
		return cmdutil.HostErr(cfg.File, err)
	}
	reports, err := compose.VerifyAudit(opts.Ctx, cfg, f.Databases(chainKey))
	if err != nil {
		return cmdutil.HostErr(cfg.File, err)
	}
	if reports == nil {
		reports = []auditlog.ChainReport{}
	}
	if opts.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, reports); err != nil {
			return err
		}
	} else {
		printReports(f.IO.Out, reports)
	}
	for _, r := range reports {
		if r.Broken != nil {
			return &cmdutil.ExitErr{Code: cmdutil.ExitChainBroken, Err: errors.New("the audit chain is broken"), Printed: opts.JSON}
		}
	}
	return nil
}

// printReports says each chain's verdict.
func printReports(w io.Writer, reports []auditlog.ChainReport) {
	for _, r := range reports {
		switch {
		case r.Broken != nil:
			fmt.Fprintf(w, "chain %s: BROKEN at record %d: %s (%d records before it check out)\n", r.Chain, r.Broken.Seq, r.Broken.Reason, r.Records)
		case r.Keyed == 0:
			fmt.Fprintf(w, "chain %s: %d records, intact\n", r.Chain, r.Records)
		case r.Keyed == r.Records:
			fmt.Fprintf(w, "chain %s: %d records, intact, keyed\n", r.Chain, r.Records)
		default:
			fmt.Fprintf(w, "chain %s: %d records, intact; the last %d keyed, the first %d unkeyed (SHA-256 only)\n", r.Chain, r.Records, r.Keyed, r.Records-r.Keyed)
		}
	}
	if len(reports) == 0 {
		fmt.Fprintln(w, "no audit records")
	}
}
