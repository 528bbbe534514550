// Package logout is `agenthost auth logout`: stored tokens deleted, a
// server's or every one.
package logout

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host/oauth"
)

// LogoutOptions are `auth logout`'s.
type LogoutOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx     context.Context
	Args    []string
	URL     string
	All     bool
	Subject string
}

// NewCmdLogout is `agenthost auth logout`; runF replaces logoutRun (tests).
func NewCmdLogout(f *cmdutil.Factory, runF func(*LogoutOptions) error) *cobra.Command {
	opts := &LogoutOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "logout SERVER | logout --url URL | logout --all",
		Short: "Delete stored tokens: a server's (for --subject), or every one with --all",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.Args = cmd.Context(), args
			return cmdutil.Run(opts, runF, logoutRun)
		},
	}
	cmd.Flags().StringVar(&opts.URL, "url", "", "the ad-hoc server at this URL")
	cmd.Flags().BoolVar(&opts.All, "all", false, "delete every stored token")
	cmd.Flags().StringVar(&opts.Subject, "subject", "", "the user or tenant whose token to delete")
	return cmd
}

func logoutRun(opts *LogoutOptions) error {
	f := opts.Factory
	store, err := cmdutil.TokenStore()
	if err != nil {
		return err
	}
	if opts.All {
		if len(opts.Args) > 0 || opts.URL != "" {
			return cmdutil.UsageErr(errors.New("--all deletes every token; name no server"))
		}
		entries, err := store.List(opts.Ctx)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if err := store.Delete(opts.Ctx, e.Key); err != nil {
				return err
			}
		}
		fmt.Fprintf(f.IO.Out, "deleted %d token(s)\n", len(entries))
		return nil
	}
	name, sc, err := shared.Server(f, opts.Args, opts.URL)
	if err != nil {
		return err
	}
	res, err := oauth.CanonicalResource(sc.URL)
	if err != nil {
		return cmdutil.UsageErr(err)
	}
	if err := store.Delete(opts.Ctx, oauth.Key{Subject: opts.Subject, Resource: res}); err != nil {
		return err
	}
	fmt.Fprintf(f.IO.Out, "logged out of %s%s\n", name, cmdutil.SubjectNote(opts.Subject))
	return nil
}
