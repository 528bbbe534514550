package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/childproc"
)

// serverJSON is one server in `servers --json` (docs/cli.md).
type serverJSON struct {
	Name            string  `json:"name"`
	Status          string  `json:"status"`
	Error           *string `json:"error"`
	ProtocolVersion *string `json:"protocolVersion"`
	SecureParams    bool    `json:"secureParams"`
	Tools           int     `json:"tools"`
	// Sandbox is what the kernel enforces (null for a server reached by
	// url).
	Sandbox *childproc.Enforcement `json:"sandbox"`
}

func (a *app) serversCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "Connect to every configured server and report its status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.f.ReportsServers = true
			cfg, err := a.f.Config()
			if err != nil {
				return err
			}
			h, err := a.f.Host(cfg, &a.sess)
			if err != nil {
				return err
			}
			h.Connect(cmd.Context())
			out := []serverJSON{}
			for _, s := range h.Servers() {
				sj := serverJSON{Name: s.Name, Status: string(s.Status), SecureParams: s.SecureParams, Tools: len(s.Tools), Sandbox: s.Sandbox}
				if s.Error != "" {
					e := a.f.Redact(s.Error)
					sj.Error = &e
				}
				if s.ProtocolVersion != "" {
					v := s.ProtocolVersion
					sj.ProtocolVersion = &v
				}
				out = append(out, sj)
			}
			unavailable := 0
			for _, s := range out {
				if s.Status == string(host.StatusError) {
					unavailable++
				}
			}
			if err := a.printServers(out, asJSON); err != nil {
				return err
			}
			if unavailable > 0 {
				// A health check: exit 6 when any configured server is
				// unavailable (docs/cli.md).
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Printed: true}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the document described in docs/cli.md)")
	return cmd
}

func (a *app) printServers(out []serverJSON, asJSON bool) error {
	if asJSON {
		return cmdutil.WriteJSON(a.f.IO.Out, map[string]any{"servers": out})
	}
	if len(out) == 0 {
		fmt.Fprintln(a.f.IO.Out, "no servers configured")
		return nil
	}
	tw := tabwriter.NewWriter(a.f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tPROTOCOL\tSECURE-PARAMS\tTOOLS\tERROR")
	for _, s := range out {
		proto, errText := "-", ""
		if s.ProtocolVersion != nil {
			proto = *s.ProtocolVersion
		}
		if s.Error != nil {
			errText = *s.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%d\t%s\n", s.Name, s.Status, cmdutil.Shown(a.f.IO.Out, proto), s.SecureParams, s.Tools, cmdutil.Shown(a.f.IO.Out, errText))
	}
	return tw.Flush()
}
