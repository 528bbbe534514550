// Package fullbuild is what the full build of the agenthost CLI
// (cmd/agenthost/agenthost-full) links beyond the lean one: the libraries
// of cmd/agenthost/internal/fulllibs, the serve and sessions commands, and
// run with its REPL (docs/cli.md, "Two binaries").
package fullbuild

import (
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/run"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/run/repl"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/serve"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/sessions"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/fulllibs"
)

// Features are every feature of the CLI.
func Features() cmdutil.Features {
	fs := fulllibs.Features()
	fs.Commands = func(f *cmdutil.Factory) []*cobra.Command {
		return []*cobra.Command{serve.NewCmdServe(f, nil), sessions.NewCmdSessions(f), run.NewCmdRunWith(f, nil, repl.REPL{})}
	}
	return fs
}
