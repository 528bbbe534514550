// Package status is `agenthost auth status`: the stored tokens (never
// their values), as a table or the JSON document of docs/cli.md.
package status

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/oauth"
)

// StatusOptions are `auth status`'.
type StatusOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	JSON bool
}

// Report is `auth status --json`.
type Report struct {
	File   string  `json:"file"`
	Tokens []Token `json:"tokens"`
}

// Token is one stored token, without its value.
type Token struct {
	Server   string     `json:"server"`
	Resource string     `json:"resource"`
	Subject  string     `json:"subject"`
	Issuer   string     `json:"issuer"`
	Expiry   *time.Time `json:"expiry"`
	Expired  bool       `json:"expired"`
	Scopes   []string   `json:"scopes"`
	Refresh  bool       `json:"refreshable"`
	// DPoP: the token is bound to a key (RFC 9449), named by its
	// thumbprint, never shown.
	DPoP           bool   `json:"dpop"`
	DPoPThumbprint string `json:"dpopThumbprint,omitempty"`
}

// NewCmdStatus is `agenthost auth status`; runF replaces statusRun (tests).
func NewCmdStatus(f *cmdutil.Factory, runF func(*StatusOptions) error) *cobra.Command {
	opts := &StatusOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "List the stored tokens (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, statusRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	return cmd
}

func statusRun(opts *StatusOptions) error {
	f := opts.Factory
	store, err := cmdutil.TokenStore()
	if err != nil {
		return err
	}
	entries, err := store.List(opts.Ctx)
	if err != nil {
		return err
	}
	report := NewReport(store.Path(), entries, serverNamesByResource(f.ConfigPath), time.Now())
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, report)
	}
	return printTable(f.IO, report)
}

// NewReport is the report of the stored entries, sorted by resource and
// subject; names maps resources to configured server names.
func NewReport(file string, entries []oauth.Entry, names map[string]string, now time.Time) Report {
	rows := make([]Token, 0, len(entries))
	for _, e := range entries {
		r := Token{Server: names[e.Key.Resource], Resource: e.Key.Resource, Subject: e.Key.Subject, Issuer: e.Key.Issuer,
			Scopes: e.Token.Scopes, Refresh: e.Token.RefreshToken != "",
			DPoP: e.Token.DPoPKey != nil, DPoPThumbprint: e.Token.DPoPThumbprint()}
		if r.Scopes == nil {
			r.Scopes = []string{}
		}
		if !e.Token.Expiry.IsZero() {
			exp := e.Token.Expiry.UTC()
			r.Expiry, r.Expired = &exp, !now.Before(exp)
		}
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(x, y Token) int {
		return strings.Compare(x.Resource+"\x00"+x.Subject, y.Resource+"\x00"+y.Subject)
	})
	return Report{File: file, Tokens: rows}
}

func printTable(io *cmdutil.IOStreams, r Report) error {
	if len(r.Tokens) == 0 {
		fmt.Fprintf(io.Out, "no stored tokens (%s)\n", r.File)
		return nil
	}
	w := io.Out
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tSUBJECT\tISSUER\tEXPIRES\tSCOPES\tREFRESH\tDPOP")
	for _, r := range r.Tokens {
		server := r.Server
		if server == "" {
			server = r.Resource
		}
		exp := "-"
		if r.Expiry != nil {
			exp = r.Expiry.Format(time.RFC3339)
			if r.Expired {
				exp += " (expired)"
			}
		}
		subject := r.Subject
		if subject == "" {
			subject = "-"
		}
		dpop := "-"
		if r.DPoP {
			dpop = "jkt " + r.DPoPThumbprint
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\n", cmdutil.Shown(w, server), cmdutil.Shown(w, subject), cmdutil.Shown(w, r.Issuer),
			exp, cmdutil.Shown(w, strings.Join(r.Scopes, " ")), r.Refresh, dpop)
	}
	return tw.Flush()
}

// serverNamesByResource maps canonical server URLs to configured names
// (empty when no config loads).
func serverNamesByResource(configPath string) map[string]string {
	out := map[string]string{}
	cfg, err := config.LoadDefault(configPath)
	if err != nil {
		return out
	}
	for name, sc := range cfg.MCPServers {
		if sc == nil || sc.URL == "" {
			continue
		}
		if r, err := oauth.CanonicalResource(sc.URL); err == nil {
			out[r] = name
		}
	}
	return out
}
