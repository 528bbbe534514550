// Command agenthost is the CLI of the agenthost runtime, in its lean build:
// it links what every command line needs and hands a command line that
// needs more (serve, saved sessions, a database, telemetry, credential
// plugins) to the full build, cmd/agenthost/agenthost-full, installed
// beside it (docs/cli.md, "Two binaries"). The commands live in
// cmd/agenthost/internal/cmd (the root command and one package per
// command); everything else in the library packages (host, config,
// bindings, approvals, plugins).
package main

import (
	"os"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/root"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/handover"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/startgc"
	"github.com/agenthost/agenthost/internal/childproc"

	// Started as the supervisor of a stdio server, plugin or hook (see
	// host.Options.ChildSupervisor), the program is only that, from before
	// the other packages initialize.
	_ "github.com/agenthost/agenthost/internal/childproc/supervisor"
)

func main() {
	startgc.Restore()
	// Started as the supervisor of a stdio server, plugin or hook (see
	// host.Options.ChildSupervisor): that is all this process does.
	childproc.MaybeSupervise()
	args := os.Args[1:]
	os.Exit(root.Main(args, cmdutil.Features{}, handover.Exec(args)))
}
