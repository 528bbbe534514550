// Package mcp is `agenthost mcp`, Claude Code's `claude mcp` for
// agenthost's configuration file (docs/cli.md): its verbs are the packages
// below it.
package mcp

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/add"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/get"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/list"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/remove"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdMCP is `agenthost mcp`.
func NewCmdMCP(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Add, list, show and remove MCP servers of the config file, as `claude mcp` does",
	}
	cmd.AddCommand(add.NewCmdAdd(f, nil), list.NewCmdList(f, nil), get.NewCmdGet(f, nil), remove.NewCmdRemove(f, nil))
	return cmd
}
