// Package login is `agenthost auth login`: authorize agenthost for a
// server, through the browser or unattended.
package login

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/oauth"
)

// LoginOptions are `auth login`'s.
type LoginOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx     context.Context
	Args    []string
	URL     string
	Timeout time.Duration
	Subject string
}

// NewCmdLogin is `agenthost auth login`; runF replaces loginRun (tests).
func NewCmdLogin(f *cmdutil.Factory, runF func(*LoginOptions) error) *cobra.Command {
	opts := &LoginOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "login SERVER | login --url URL",
		Short: "Authorize agenthost for a server: opens $BROWSER (or prints the URL) and receives the redirect on a loopback port",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.Args = cmd.Context(), args
			return cmdutil.Run(opts, runF, loginRun)
		},
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "log in to an ad-hoc server at this URL (no config; client settings from AGENTHOST_OAUTH_* variables)")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", cmdutil.LoginTimeout, "how long to wait for the authorization")
	cmd.Flags().StringVar(&opts.Subject, "subject", "", "the user or tenant the token acts for")
	return cmd
}

func loginRun(opts *LoginOptions) error {
	f := opts.Factory
	name, sc, err := shared.Server(f, opts.Args, opts.URL)
	if err != nil {
		return err
	}
	store, err := cmdutil.TokenStore()
	if err != nil {
		return err
	}
	c, err := compose.NewOAuthClient(sc, store)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	ctx, cancel := context.WithTimeout(opts.Ctx, opts.Timeout)
	defer cancel()
	if _, err := c.Probe(ctx); err != nil {
		return cmdutil.CodeErr(cmdutil.ExitUnavailable, err)
	}
	if c.Unattended() {
		_, err = c.Token(ctx, opts.Subject)
	} else {
		err = c.Login(ctx, oauth.LoginOptions{Subject: opts.Subject, Open: f.OpenBrowser()})
	}
	if err != nil {
		return cmdutil.CodeErr(cmdutil.ExitAuthorization, err)
	}
	fmt.Fprintf(f.IO.Out, "Logged in to %s%s; the token is stored in %s\n", name, cmdutil.SubjectNote(opts.Subject), store.Path())
	return nil
}
