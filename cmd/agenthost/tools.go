package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

func (a *app) toolsCommand() *cobra.Command {
	var asJSON bool
	var server, serverURL, transport string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Show the catalog: what the model sees, what is hidden or excluded and why",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.f.ReportsServers = true
			if serverURL != "" && server != "" {
				return cmdutil.UsageErr(errors.New("--server and --url exclude each other"))
			}
			t := cmdutil.Target{Server: server, ServerFlag: "--server: ", URL: serverURL, Transport: transport, TransportSet: cmd.Flags().Changed("transport")}
			h, sess, err := a.f.Connect(cmd.Context(), t, &a.sess)
			if err != nil {
				return err
			}
			if server != "" {
				// Only the server asked about: another broken server must
				// not hold this command up for its connect timeout.
				_ = h.Refresh(cmd.Context(), server)
			} else {
				h.Connect(cmd.Context())
			}
			report := sess.Report(cmd.Context(), server)
			if asJSON {
				if err := cmdutil.WriteJSON(a.f.IO.Out, report); err != nil {
					return err
				}
				return unavailableExit(report)
			}
			for i, s := range report.Servers {
				if i > 0 {
					fmt.Fprintln(a.f.IO.Out)
				}
				line := fmt.Sprintf("%s (%s", s.Name, s.Status)
				if s.ProtocolVersion != nil {
					line += ", " + *s.ProtocolVersion
				}
				if s.SecureParams {
					line += ", secure-params"
				}
				line += ")"
				fmt.Fprintln(a.f.IO.Out, cmdutil.Shown(a.f.IO.Out, line))
				if s.Error != nil {
					fmt.Fprintln(a.f.IO.Out, "  error:", cmdutil.Shown(a.f.IO.Out, *s.Error))
				}
				for _, w := range s.Warnings {
					fmt.Fprintln(a.f.IO.Out, "  warning:", cmdutil.Shown(a.f.IO.Out, w))
				}
				for _, t := range s.Tools {
					name := t.Name
					if t.ExposedName != nil && t.Status == "active" {
						name = *t.ExposedName
					}
					fmt.Fprintf(a.f.IO.Out, "  %-9s %s", t.Status, cmdutil.Shown(a.f.IO.Out, name))
					if len(t.SecureParams) > 0 {
						fmt.Fprintf(a.f.IO.Out, "  [secure: %s]", cmdutil.Shown(a.f.IO.Out, strings.Join(t.SecureParams, ", ")))
					}
					if t.Decision != nil {
						fmt.Fprintf(a.f.IO.Out, "  decision: %s", *t.Decision)
					}
					fmt.Fprintln(a.f.IO.Out)
					if t.Reason != nil {
						fmt.Fprintf(a.f.IO.Out, "            why: %s\n", cmdutil.Shown(a.f.IO.Out, *t.Reason))
					}
					for _, w := range t.Warnings {
						fmt.Fprintf(a.f.IO.Out, "            warning: %s\n", cmdutil.Shown(a.f.IO.Out, w))
					}
					if line := vocabularyLine(t.Risk); line != "" {
						fmt.Fprintf(a.f.IO.Out, "            %s\n", cmdutil.Shown(a.f.IO.Out, line))
					}
				}
			}
			if len(report.Servers) > 0 {
				fmt.Fprintln(a.f.IO.Out)
				fmt.Fprintln(a.f.IO.Out, cmdutil.Shown(a.f.IO.Out, summaryLine(sess.View(cmd.Context()).Summary())))
			}
			return unavailableExit(report)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the document described in docs/cli.md)")
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	cmd.Flags().StringVar(&serverURL, "url", "", "the tools of an ad-hoc server at this URL (no config)")
	cmd.Flags().StringVar(&transport, "transport", "", cmdutil.TransportUsage)
	a.addSessionFlags(cmd)
	return cmd
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
			return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
		}
	}
	return nil
}

// vocabularyLine says what a tool's risk took from the action-metadata
// vocabulary ("" for nothing): the fields it set and the labels it gives
// every result.
func vocabularyLine(risk json.RawMessage) string {
	var eff approvals.Effective
	if len(risk) == 0 || json.Unmarshal(risk, &eff) != nil {
		return ""
	}
	parts := eff.FromSource(approvals.SourceActionMetadata)
	if len(eff.ResultLabels) > 0 {
		parts = append(parts, "results labelled "+strings.Join(eff.ResultLabels, ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return "from action-metadata: " + strings.Join(parts, "; ")
}
