// Package auth is `agenthost auth`: log in to OAuth-protected servers,
// list and delete stored tokens (docs/cli.md); its verbs are the packages
// below it.
package auth

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/login"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/logout"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth/status"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// NewCmdAuth is `agenthost auth`.
func NewCmdAuth(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Log in to OAuth-protected MCP servers, list and delete stored tokens (docs/cli.md)",
	}
	cmd.AddCommand(login.NewCmdLogin(f, nil), status.NewCmdStatus(f, nil), logout.NewCmdLogout(f, nil))
	return cmd
}
