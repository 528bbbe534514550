package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/oauth"
)

// loginTimeout bounds how long `auth login` waits for the browser's redirect.
const loginTimeout = 5 * time.Minute

func (a *app) authCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to OAuth-protected MCP servers, list and delete stored tokens (docs/cli.md)",
	}
	cmd.AddCommand(a.authLoginCommand(), a.authStatusCommand(), a.authLogoutCommand())
	return cmd
}

// tokenStore is the CLI's token file (docs/cli.md, "auth").
func (a *app) tokenStore() (*oauth.FileStore, error) {
	p, err := oauth.DefaultFilePath(os.Getenv)
	if err != nil {
		return nil, err
	}
	return oauth.NewFileStore(p), nil
}

// authServer resolves SERVER or --url to a server config and its name.
func (a *app) authServer(args []string, serverURL string) (string, *config.Server, error) {
	switch {
	case serverURL != "" && len(args) == 0:
		cfg, err := adHocConfig(serverURL, "http")
		if err != nil {
			return "", nil, usageErr(err)
		}
		return serverURL, cfg.MCPServers[adHocServer], nil
	case serverURL == "" && len(args) == 1:
		cfg, err := a.loadConfigWith(args[0], "")
		if err != nil {
			return "", nil, err
		}
		sc := cfg.MCPServers[args[0]]
		if !compose.OAuthEnabled(sc) {
			return "", nil, usageErr(fmt.Errorf("server %q does not use OAuth: it is not reached by url, has oauth.disabled, or sends a static Authorization header", args[0]))
		}
		return args[0], sc, nil
	}
	return "", nil, usageErr(errors.New("name one configured SERVER or pass --url URL"))
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
			store, err := a.tokenStore()
			if err != nil {
				return err
			}
			c, err := compose.NewOAuthClient(sc, store)
			if err != nil {
				return usageErr(err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			if _, err := c.Probe(ctx); err != nil {
				return &exitErr{code: exitUnavailable, err: err}
			}
			if c.Unattended() {
				if _, err := c.Token(ctx, a.subject); err != nil {
					return &exitErr{code: exitAuthorization, err: err}
				}
			} else {
				err := c.Login(ctx, oauth.LoginOptions{Subject: a.subject, Open: a.openBrowser()})
				if err != nil {
					return &exitErr{code: exitAuthorization, err: err}
				}
			}
			fmt.Fprintf(a.stdout, "Logged in to %s%s; the token is stored in %s\n", name, subjectNote(a.subject), store.Path())
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "url", "", "log in to an ad-hoc server at this URL (no config; client settings from AGENTHOST_OAUTH_* variables)")
	cmd.Flags().DurationVar(&timeout, "timeout", loginTimeout, "how long to wait for the authorization")
	cmd.Flags().StringVar(&a.subject, "subject", "", "the user or tenant the token acts for")
	return cmd
}

func subjectNote(subject string) string {
	if subject == "" {
		return ""
	}
	return fmt.Sprintf(" for subject %q", subject)
}

// openBrowser sends the person to the authorization URL: through $BROWSER
// when it is set (terminal or not: that is how scripts play the browser),
// and the URL is printed on stderr either way.
func (a *app) openBrowser() func(ctx context.Context, authURL string) error {
	open, ok := compose.BrowserOpener(os.Getenv)
	return func(ctx context.Context, authURL string) error {
		if ok {
			fmt.Fprintf(a.stderr, "agenthost: opening the browser ($BROWSER) to authorize; if it does not open, visit:\n  %s\n", authURL)
			return open(ctx, authURL)
		}
		fmt.Fprintf(a.stderr, "agenthost: open this URL in your browser to authorize agenthost:\n  %s\n", authURL)
		return nil
	}
}

// canLogIn reports whether `call`, `run` and the other commands may start
// a login: a person is at the terminal, or $BROWSER is set.
func (a *app) canLogIn() bool {
	if _, ok := compose.BrowserOpener(os.Getenv); ok {
		return true
	}
	return a.stdinIsTerminal()
}

// oauthLogin is the host's Login hook: it logs the subject in through the
// browser when someone can, and otherwise reports that the server needs
// `agenthost auth login` (exit 8).
func (a *app) oauthLogin(ctx context.Context, server string, c *oauth.Client, req *oauth.AuthorizationRequiredError) error {
	if !a.canLogIn() {
		hinted := *req
		hinted.Hint = fmt.Sprintf("nobody can log in here (stdin is not a terminal and $BROWSER is not set): run `agenthost auth login %s` first", loginTarget(server, c))
		return &hinted
	}
	fmt.Fprintf(a.stderr, "agenthost: %s requires authorization%s; logging in\n", server, subjectNote(req.Subject))
	// The login outlives the request's own deadline (a person types a
	// password); Ctrl-C still ends the process.
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loginTimeout)
	defer cancel()
	return c.Login(lctx, oauth.LoginOptions{Subject: req.Subject, Scopes: req.Scopes, Open: a.openBrowser()})
}

// needsLogin fails `run` (exit 8) when a server could not connect because
// it requires an authorization nobody could give here: the oauthLogin hook
// already said how to log in, in the server's error.
func needsLogin(h *host.Host) error {
	for _, snap := range h.Servers() {
		if snap.Status == host.StatusError && strings.Contains(snap.Error, "requires authorization") {
			return &exitErr{code: exitAuthorization, err: fmt.Errorf("server %s: %s", snap.Name, snap.Error)}
		}
	}
	return nil
}

// loginTarget is what to pass to `auth login` for a server.
func loginTarget(server string, c *oauth.Client) string {
	if server == adHocServer {
		return "--url " + c.Resource()
	}
	return server
}

func (a *app) authStatusCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "List the stored tokens (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := a.tokenStore()
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
				// DPoP: the token is bound to a key (RFC 9449), named
				// by its thumbprint, never shown.
				DPoP           bool   `json:"dpop"`
				DPoPThumbprint string `json:"dpopThumbprint,omitempty"`
			}
			rows := make([]row, 0, len(entries))
			now := time.Now()
			for _, e := range entries {
				r := row{Server: names[e.Key.Resource], Resource: e.Key.Resource, Subject: e.Key.Subject, Issuer: e.Key.Issuer,
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
			slices.SortFunc(rows, func(x, y row) int {
				return strings.Compare(x.Resource+"\x00"+x.Subject, y.Resource+"\x00"+y.Subject)
			})
			if asJSON {
				return writeJSON(a.stdout, map[string]any{"file": store.Path(), "tokens": rows})
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.stdout, "no stored tokens (%s)\n", store.Path())
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SERVER\tSUBJECT\tISSUER\tEXPIRES\tSCOPES\tREFRESH\tDPOP")
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
				dpop := "-"
				if r.DPoP {
					dpop = "jkt " + r.DPoPThumbprint
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%t\t%s\n", shown(a.stdout, server), shown(a.stdout, subject), shown(a.stdout, r.Issuer),
					exp, shown(a.stdout, strings.Join(r.Scopes, " ")), r.Refresh, dpop)
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
	cfg, err := config.LoadDefault(a.configPath)
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
			store, err := a.tokenStore()
			if err != nil {
				return err
			}
			if all {
				if len(args) > 0 || serverURL != "" {
					return usageErr(errors.New("--all deletes every token; name no server"))
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
				fmt.Fprintf(a.stdout, "deleted %d token(s)\n", len(entries))
				return nil
			}
			name, sc, err := a.authServer(args, serverURL)
			if err != nil {
				return err
			}
			res, err := oauth.CanonicalResource(sc.URL)
			if err != nil {
				return usageErr(err)
			}
			if err := store.Delete(cmd.Context(), oauth.Key{Subject: a.subject, Resource: res}); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "logged out of %s%s\n", name, subjectNote(a.subject))
			return nil
		},
	}
	cmd.Flags().StringVar(&serverURL, "url", "", "the ad-hoc server at this URL")
	cmd.Flags().BoolVar(&all, "all", false, "delete every stored token")
	cmd.Flags().StringVar(&a.subject, "subject", "", "the user or tenant whose token to delete")
	return cmd
}
