// Package remove is `agenthost mcp remove`: a server removed from the
// config file.
package remove

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
)

// RemoveOptions are `mcp remove`'s.
type RemoveOptions struct {
	IO         *cmdutil.IOStreams
	ConfigPath string
	Name       string
	Scope      string
}

// NewCmdRemove is `agenthost mcp remove`; runF replaces removeRun (tests).
func NewCmdRemove(f *cmdutil.Factory, runF func(*RemoveOptions) error) *cobra.Command {
	opts := &RemoveOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a server from the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ConfigPath, opts.Name = f.ConfigPath, args[0]
			return cmdutil.Run(opts, runF, removeRun)
		},
	}
	cmd.Flags().StringVarP(&opts.Scope, "scope", "s", "local", "which file, as for mcp add")
	return cmd
}

func removeRun(opts *RemoveOptions) error {
	path, err := shared.File(opts.ConfigPath, opts.Scope)
	if err != nil {
		return err
	}
	if err := config.RemoveServer(path, opts.Name); err != nil {
		if errors.Is(err, config.ErrNoSuchServer) {
			return cmdutil.UsageErr(fmt.Errorf("%s: no server named %q", path, opts.Name))
		}
		return cmdutil.UsageErr(err)
	}
	fmt.Fprintf(opts.IO.Out, "Removed MCP server %s from %s\n", opts.Name, path)
	return nil
}
