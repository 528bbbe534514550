package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/config"
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
			a.reportsServers = true
			var cfg *config.Config
			var err error
			if serverURL != "" {
				if server != "" {
					return usageErr(errors.New("--server and --url exclude each other"))
				}
				cfg, err = adHocConfig(serverURL, transport)
				if err != nil {
					return usageErr(err)
				}
			} else if cfg, err = a.loadConfigWith(server, "--server: "); err != nil {
				return err
			}
			h, err := a.newHost(cfg)
			if err != nil {
				return err
			}
			if serverURL != "" && !cmd.Flags().Changed("transport") {
				if h, err = a.adHocFallback(cmd.Context(), h, serverURL); err != nil {
					return usageErr(err)
				}
			}
			sess, err := a.newSession(h)
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
				if err := writeJSON(a.stdout, report); err != nil {
					return err
				}
				return unavailableExit(report)
			}
			for i, s := range report.Servers {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				line := fmt.Sprintf("%s (%s", s.Name, s.Status)
				if s.ProtocolVersion != nil {
					line += ", " + *s.ProtocolVersion
				}
				if s.SecureParams {
					line += ", secure-params"
				}
				line += ")"
				fmt.Fprintln(a.stdout, shown(a.stdout, line))
				if s.Error != nil {
					fmt.Fprintln(a.stdout, "  error:", shown(a.stdout, *s.Error))
				}
				for _, w := range s.Warnings {
					fmt.Fprintln(a.stdout, "  warning:", shown(a.stdout, w))
				}
				for _, t := range s.Tools {
					name := t.Name
					if t.ExposedName != nil && t.Status == "active" {
						name = *t.ExposedName
					}
					fmt.Fprintf(a.stdout, "  %-9s %s", t.Status, shown(a.stdout, name))
					if len(t.SecureParams) > 0 {
						fmt.Fprintf(a.stdout, "  [secure: %s]", shown(a.stdout, strings.Join(t.SecureParams, ", ")))
					}
					if t.Decision != nil {
						fmt.Fprintf(a.stdout, "  decision: %s", *t.Decision)
					}
					fmt.Fprintln(a.stdout)
					if t.Reason != nil {
						fmt.Fprintf(a.stdout, "            why: %s\n", shown(a.stdout, *t.Reason))
					}
					for _, w := range t.Warnings {
						fmt.Fprintf(a.stdout, "            warning: %s\n", shown(a.stdout, w))
					}
					if line := vocabularyLine(t.Risk); line != "" {
						fmt.Fprintf(a.stdout, "            %s\n", shown(a.stdout, line))
					}
				}
			}
			if len(report.Servers) > 0 {
				fmt.Fprintln(a.stdout)
				fmt.Fprintln(a.stdout, shown(a.stdout, summaryLine(sess.View(cmd.Context()).Summary())))
			}
			return unavailableExit(report)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the document described in docs/cli.md)")
	cmd.Flags().StringVar(&server, "server", "", "only this server")
	cmd.Flags().StringVar(&serverURL, "url", "", "the tools of an ad-hoc server at this URL (no config)")
	cmd.Flags().StringVar(&transport, "transport", "", transportUsage)
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
			return &exitErr{code: exitUnavailable, printed: true}
		}
	}
	return nil
}

// plural is "1 step", "2 steps".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
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
