// Package servers is `agenthost servers`: every configured server's
// status, as a table or the JSON document of docs/cli.md.
package servers

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/internal/childproc"
)

// ServersOptions are `servers`'.
type ServersOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	JSON bool
}

// Report is `servers --json` (docs/cli.md).
type Report struct {
	Servers []Server `json:"servers"`
}

// Server is one server in Report.
type Server struct {
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

// NewCmdServers is `agenthost servers`; runF replaces serversRun (tests).
func NewCmdServers(f *cmdutil.Factory, runF func(*ServersOptions) error) *cobra.Command {
	opts := &ServersOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "servers",
		Short: "Connect to every configured server and report its status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, serversRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON (the document described in docs/cli.md)")
	return cmd
}

func serversRun(opts *ServersOptions) error {
	f := opts.Factory
	f.ReportsServers = true
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		return err
	}
	h.Connect(opts.Ctx)
	report := NewReport(h.Servers(), f.Redact)
	if opts.JSON {
		err = cmdutil.WriteJSON(f.IO.Out, report)
	} else {
		err = printTable(f.IO, report)
	}
	if err != nil {
		return err
	}
	for _, s := range report.Servers {
		if s.Status == string(host.StatusError) {
			// A health check: exit 6 when any configured server is
			// unavailable (docs/cli.md).
			return cmdutil.Exit(cmdutil.ExitUnavailable)
		}
	}
	return nil
}

// NewReport is the report of the servers' snapshots, their errors
// redacted.
func NewReport(snaps []*host.ServerSnapshot, redact func(string) string) Report {
	out := Report{Servers: []Server{}}
	for _, s := range snaps {
		sj := Server{Name: s.Name, Status: string(s.Status), SecureParams: s.SecureParams, Tools: len(s.Tools), Sandbox: s.Sandbox}
		if s.Error != "" {
			e := redact(s.Error)
			sj.Error = &e
		}
		if s.ProtocolVersion != "" {
			v := s.ProtocolVersion
			sj.ProtocolVersion = &v
		}
		out.Servers = append(out.Servers, sj)
	}
	return out
}

func printTable(io *cmdutil.IOStreams, r Report) error {
	if len(r.Servers) == 0 {
		fmt.Fprintln(io.Out, "no servers configured")
		return nil
	}
	tw := tabwriter.NewWriter(io.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATUS\tPROTOCOL\tSECURE-PARAMS\tTOOLS\tERROR")
	for _, s := range r.Servers {
		proto, errText := "-", ""
		if s.ProtocolVersion != nil {
			proto = *s.ProtocolVersion
		}
		if s.Error != nil {
			errText = *s.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%t\t%d\t%s\n", s.Name, s.Status, cmdutil.Shown(io.Out, proto), s.SecureParams, s.Tools, cmdutil.Shown(io.Out, errText))
	}
	return tw.Flush()
}
