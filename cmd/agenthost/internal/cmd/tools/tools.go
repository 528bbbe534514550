// Package tools is `agenthost tools`: the catalog as the session sees it
// (host.CatalogReport), as text or the JSON document of docs/cli.md.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// ToolsOptions are `tools`'.
type ToolsOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx    context.Context
	JSON   bool
	Server string
	cmdutil.AdHocFlags
	Session cmdutil.SessionFlags
}

// NewCmdTools is `agenthost tools`; runF replaces toolsRun (tests).
func NewCmdTools(f *cmdutil.Factory, runF func(*ToolsOptions) error) *cobra.Command {
	opts := &ToolsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Show the catalog: what the model sees, what is hidden or excluded and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			opts.Parsed(cmd)
			if opts.URL != "" && opts.Server != "" {
				return cmdutil.UsageErr(errors.New("--server and --url exclude each other"))
			}
			return cmdutil.Run(opts, runF, toolsRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON (the document described in docs/cli.md)")
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server")
	cmdutil.AddAdHocFlags(cmd, &opts.AdHocFlags, "the tools of an ad-hoc server at this URL (no config)")
	cmdutil.AddSessionFlags(cmd, &opts.Session)
	return cmd
}

func toolsRun(opts *ToolsOptions) error {
	f := opts.Factory
	f.ReportsServers = true
	t := opts.Target(opts.Server, "--server: ")
	h, sess, err := f.Connect(opts.Ctx, t, &opts.Session)
	if err != nil {
		return err
	}
	if opts.Server != "" {
		// Only the server asked about: another broken server must not
		// hold this command up for its connect timeout.
		_ = h.Refresh(opts.Ctx, opts.Server)
	} else {
		h.Connect(opts.Ctx)
	}
	report := sess.Report(opts.Ctx, opts.Server)
	if opts.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, report); err != nil {
			return err
		}
		return unavailableExit(report)
	}
	printReport(f.IO.Out, report)
	if len(report.Servers) > 0 {
		fmt.Fprintln(f.IO.Out)
		fmt.Fprintln(f.IO.Out, cmdutil.Shown(f.IO.Out, summaryLine(sess.View(opts.Ctx).Summary())))
	}
	return unavailableExit(report)
}

// printReport prints the catalog for a person: each server, then each
// tool with its status, secure parameters, decision, reason and warnings.
func printReport(w io.Writer, report *host.CatalogReport) {
	for i, s := range report.Servers {
		if i > 0 {
			fmt.Fprintln(w)
		}
		line := fmt.Sprintf("%s (%s", s.Name, s.Status)
		if s.ProtocolVersion != nil {
			line += ", " + *s.ProtocolVersion
		}
		if s.SecureParams {
			line += ", secure-params"
		}
		line += ")"
		fmt.Fprintln(w, cmdutil.Shown(w, line))
		if s.Error != nil {
			fmt.Fprintln(w, "  error:", cmdutil.Shown(w, *s.Error))
		}
		for _, warning := range s.Warnings {
			fmt.Fprintln(w, "  warning:", cmdutil.Shown(w, warning))
		}
		for _, t := range s.Tools {
			printTool(w, t)
		}
	}
}

func printTool(w io.Writer, t host.ToolReport) {
	name := t.Name
	if t.ExposedName != nil && t.Status == "active" {
		name = *t.ExposedName
	}
	fmt.Fprintf(w, "  %-9s %s", t.Status, cmdutil.Shown(w, name))
	if len(t.SecureParams) > 0 {
		fmt.Fprintf(w, "  [secure: %s]", cmdutil.Shown(w, strings.Join(t.SecureParams, ", ")))
	}
	if t.Decision != nil {
		fmt.Fprintf(w, "  decision: %s", *t.Decision)
	}
	fmt.Fprintln(w)
	if t.Reason != nil {
		fmt.Fprintf(w, "            why: %s\n", cmdutil.Shown(w, *t.Reason))
	}
	for _, warning := range t.Warnings {
		fmt.Fprintf(w, "            warning: %s\n", cmdutil.Shown(w, warning))
	}
	if line := vocabularyLine(t.Risk); line != "" {
		fmt.Fprintf(w, "            %s\n", cmdutil.Shown(w, line))
	}
}

// summaryLine is the closing line of `tools`: counts by status, and the
// most common reason a tool is not offered.
func summaryLine(sum host.ViewSummary) string {
	line := fmt.Sprintf("%d tools: %d active, %d hidden, %d excluded.", sum.Active+sum.Hidden+sum.Excluded, sum.Active, sum.Hidden, sum.Excluded)
	if sum.TopReasonCount > 0 {
		line += fmt.Sprintf("\nMost common reason (%d of %d not offered): %s", sum.TopReasonCount, sum.Hidden+sum.Excluded, sum.TopReason)
	}
	return line
}

// unavailableExit is exit 6 when a server the report covers could not be
// reached, as `servers` exits: the catalog was printed, but without it.
func unavailableExit(report *host.CatalogReport) error {
	for _, s := range report.Servers {
		if s.Status == host.StatusError {
			return cmdutil.Exit(cmdutil.ExitUnavailable)
		}
	}
	return nil
}

// vocabularyLine says what a tool's risk took from the action-metadata
// vocabulary ("" for nothing): the fields it set and the labels it gives
// every result.
func vocabularyLine(raw json.RawMessage) string {
	var eff risk.Effective
	if len(raw) == 0 || json.Unmarshal(raw, &eff) != nil {
		return ""
	}
	parts := eff.FromSource(risk.SourceActionMetadata)
	if len(eff.ResultLabels) > 0 {
		parts = append(parts, "results labelled "+strings.Join(eff.ResultLabels, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "from action-metadata: " + strings.Join(parts, "; ")
}
