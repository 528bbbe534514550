package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/oauth"
)

func (a *app) authCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to OAuth-protected MCP servers, list and delete stored tokens (docs/cli.md)",
	}
	cmd.AddCommand(a.authLoginCommand(), a.authStatusCommand(), a.authLogoutCommand())
	return cmd
}

// authServer resolves SERVER or --url to a server config and its name.
func (a *app) authServer(args []string, serverURL string) (string, *config.Server, error) {
	switch {
	case serverURL != "" && len(args) == 0:
		cfg, err := cmdutil.AdHocConfig(serverURL, "http")
		if err != nil {
			return "", nil, cmdutil.UsageErr(err)
		}
		return serverURL, cfg.MCPServers[cmdutil.AdHocServer], nil
	case serverURL == "" && len(args) == 1:
		cfg, err := a.f.ConfigWith(args[0], "")
		if err != nil {
			return "", nil, err
		}
		sc := cfg.MCPServers[args[0]]
		if !host.OAuthEnabled(sc) {
			return "", nil, cmdutil.UsageErr(fmt.Errorf("server %q does not use OAuth: it is not reached by url, has oauth.disabled, or sends a static Authorization header", args[0]))
		}
		return args[0], sc, nil
	}
	return "", nil, cmdutil.UsageErr(errors.New("name one configured SERVER or pass --url URL"))
}

func (a *app) authLoginCommand() *cobra.Command {
	var serverURL string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "login SERVER | login --url URL",
		Short: "Authorize agenthost for a server: opens $BROWSER (or prints the URL) and receives the redirect on a loopback port",
		RunE: func(cmd *cobra.Command, args []string) error {
			name, sc, err := a.authServer(args, serverURL)
			if err != nil {
				return err
			}
			store, err := cmdutil.TokenStore()
			if err != nil {
				return err
			}
			c, err := host.NewOAuthClient(sc, store)
			if err != nil {
				return cmdutil.UsageErr(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if _, err := c.Probe(ctx); err != nil {
				return &cmdutil.ExitErr{Code: cmdutil.ExitUnavailable, Err: err}
			}
			if c.Unattended() {
				if _, err := c.Token(ctx, a.sess.Subject); err != nil {
					return &cmdutil.ExitErr{Code: cmdutil.ExitAuthorization, Err: err}
				}
			} else {
				err := c.Login(ctx, oauth.LoginOptions{Subject: a.sess.Subject, Open: a.f.OpenBrowser()})
				if err != nil {
					return &cmdutil.ExitErr{Code: cmdutil.ExitAuthorization, Err: err}
				}
			}
			fmt.Fprintf(a.f.IO.Out, "Logged in to %s%s; the token is stored in %s\n", name, cmdutil.SubjectNote(a.sess.Subject), store.Path())
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "url", "", "log in to an ad-hoc server at this URL (no config; client settings from AGENTHOST_OAUTH_* variables)")
	cmd.Flags().DurationVar(&timeout, "timeout", cmdutil.LoginTimeout, "how long to wait for the authorization")
	cmd.Flags().StringVar(&a.sess.Subject, "subject", "", "the user or tenant the token acts for")
	return cmd
}

func (a *app) authStatusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "List the stored tokens (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := cmdutil.TokenStore()
			if err != nil {
				return err
			}
			entries, err := store.List(cmd.Context())
			if err != nil {
				return err
			}
			names := a.serverNamesByResource()
			type row struct {
				Server   string     `json:"server"`
				Resource string     `json:"resource"`
				Subject  string     `json:"subject"`
				Issuer   string     `json:"issuer"`
				Expiry   *time.Time `json:"expiry"`
				Expired  bool       `json:"expired"`
				Scopes   []string   `json:"scopes"`
				Refresh  bool       `json:"refreshable"`
			}
			rows := make([]row, 0, len(entries))
			now := time.Now()
			for _, e := range entries {
				r := row{Server: names[e.Key.Resource], Resource: e.Key.Resource, Subject: e.Key.Subject, Issuer: e.Key.Issuer,
					Scopes: e.Token.Scopes, Refresh: e.Token.RefreshToken != ""}
				if r.Scopes == nil {
					r.Scopes = []string{}
				}
				if !e.Token.Expiry.IsZero() {
					exp := e.Token.Expiry.UTC()
					r.Expiry, r.Expired = &exp, !now.Before(exp)
				}
				rows = append(rows, r)
			}
			slices.SortFunc(rows, func(x, y row) int {
				return strings.Compare(x.Resource+"\x00"+x.Subject, y.Resource+"\x00"+y.Subject)
			})
			if asJSON {
				return cmdutil.WriteJSON(a.f.IO.Out, map[string]any{"file": store.Path(), "tokens": rows})
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.f.IO.Out, "no stored tokens (%s)\n", store.Path())
				return nil
			}
			tw := tabwriter.NewWriter(a.f.IO.Out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tSUBJECT\tISSUER\tEXPIRES\tSCOPES\tREFRESH")
			for _, r := range rows {
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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\n", cmdutil.Shown(a.f.IO.Out, server), cmdutil.Shown(a.f.IO.Out, subject), cmdutil.Shown(a.f.IO.Out, r.Issuer),
					exp, cmdutil.Shown(a.f.IO.Out, strings.Join(r.Scopes, " ")), r.Refresh)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// serverNamesByResource maps canonical server URLs to configured names
// (empty when no config loads).
func (a *app) serverNamesByResource() map[string]string {
	out := map[string]string{}
	cfg, err := config.LoadDefault(a.f.ConfigPath)
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

func (a *app) authLogoutCommand() *cobra.Command {
	var serverURL string
	var all bool
	cmd := &cobra.Command{
		Use:   "logout SERVER | logout --url URL | logout --all",
		Short: "Delete stored tokens: a server's (for --subject), or every one with --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			store, err := cmdutil.TokenStore()
			if err != nil {
				return err
			}
			if all {
				if len(args) > 0 || serverURL != "" {
					return cmdutil.UsageErr(errors.New("--all deletes every token; name no server"))
				}
				entries, err := store.List(cmd.Context())
				if err != nil {
					return err
				}
				for _, e := range entries {
					if err := store.Delete(cmd.Context(), e.Key); err != nil {
						return err
					}
				}
				fmt.Fprintf(a.f.IO.Out, "deleted %d token(s)\n", len(entries))
				return nil
			}
			name, sc, err := a.authServer(args, serverURL)
			if err != nil {
				return err
			}
			res, err := oauth.CanonicalResource(sc.URL)
			if err != nil {
				return cmdutil.UsageErr(err)
			}
			if err := store.Delete(cmd.Context(), oauth.Key{Subject: a.sess.Subject, Resource: res}); err != nil {
				return err
			}
			fmt.Fprintf(a.f.IO.Out, "logged out of %s%s\n", name, cmdutil.SubjectNote(a.sess.Subject))
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "url", "", "the ad-hoc server at this URL")
	cmd.Flags().BoolVar(&all, "all", false, "delete every stored token")
	cmd.Flags().StringVar(&a.sess.Subject, "subject", "", "the user or tenant whose token to delete")
	return cmd
}
