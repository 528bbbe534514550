// Package catalogue is `agenthost policy catalogue`: a YAML catalogue of
// inferred risk metadata for the connected servers.
package catalogue

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// CatalogueOptions are `policy catalogue`'s.
type CatalogueOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx    context.Context
	Server string
}

// NewCmdCatalogue is `agenthost policy catalogue`; runF replaces
// catalogueRun (tests).
func NewCmdCatalogue(f *cmdutil.Factory, runF func(*CatalogueOptions) error) *cobra.Command {
	opts := &CatalogueOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "catalogue",
		Short: "Print a YAML catalogue of inferred risk metadata to review and paste into the config",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, catalogueRun)
		},
	}
	cmd.Flags().StringVar(&opts.Server, "server", "", "only this server")
	return cmd
}

func catalogueRun(opts *CatalogueOptions) error {
	f := opts.Factory
	cfg, err := f.ConfigWith(opts.Server, "--server: ")
	if err != nil {
		return err
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		return err
	}
	names, failed := f.ConnectServers(opts.Ctx, h, opts.Server, "")
	for _, name := range names {
		if err := policyinit.WriteCatalogueYAML(f.IO.Out, name, h.Catalogue(name)); err != nil {
			return err
		}
	}
	if failed > 0 {
		return cmdutil.Exit(cmdutil.ExitUnavailable)
	}
	return nil
}
