// Command agenthost is the CLI of the agenthost runtime: it parses flags,
// reads the terminal and prints results. Everything else lives in the
// library packages (host, config, bindings, approvals, plugins).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/audit"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/call"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/demo"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/policy"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/serve"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/servers"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/sessions"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/tools"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/version"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/internal/childproc"

	// Started as the supervisor of a stdio server, plugin or hook (see
	// host.Options.ChildSupervisor), the program is only that, from before
	// the other packages initialize.
	"github.com/agenthost/agenthost/host"
	_ "github.com/agenthost/agenthost/internal/childproc/supervisor"
)

// shutdownGrace is how long the process may take to stop after SIGINT or
// SIGTERM cancelled the command. Every blocking step watches the context,
// but a CPU-bound one cannot; past the grace period (or at a second signal)
// the process exits anyway, with 128 + the signal's number.
const shutdownGrace = 5 * time.Second

func main() {
	// Started as the supervisor of a stdio server, plugin or hook (see
	// host.Options.ChildSupervisor): that is all this process does.
	childproc.MaybeSupervise()
	ctx, cancel := context.WithCancel(context.Background())
	a := &app{f: cmdutil.New(cmdutil.System())}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	stopped := make(chan struct{})
	go watchSignals(signals, stopped, a.f.InterruptTurn, cancel, shutdownGrace, func(code int, msg string) {
		fmt.Fprintln(os.Stderr, "agenthost:", msg)
		os.Exit(code)
	})
	code := a.run(ctx, os.Args[1:])
	signal.Stop(signals)
	close(stopped)
	cancel()
	os.Exit(code)
}

// watchSignals turns SIGINT and SIGTERM into cancel. In the REPL, Ctrl-C
// ends the running turn (interruptTurn reports true); otherwise (and for
// SIGTERM, or a second Ctrl-C with no turn running) the command. Once the
// command is cancelled, forceExit runs when it has not stopped (stopped is
// not closed) within grace, or at the next signal. It returns when stopped
// is closed.
func watchSignals(signals <-chan os.Signal, stopped <-chan struct{}, interruptTurn func() bool, cancel func(), grace time.Duration, forceExit func(code int, msg string)) {
	var deadline <-chan time.Time
	code := 0
	for {
		select {
		case <-stopped:
			return
		case <-deadline:
			forceExit(code, fmt.Sprintf("still running %s after the signal; exiting", grace))
			return
		case sig := <-signals:
			if code != 0 {
				forceExit(exitCodeOf(sig), "second signal; exiting")
				return
			}
			if sig == os.Interrupt && interruptTurn() {
				continue
			}
			cancel()
			code = exitCodeOf(sig)
			timer := time.NewTimer(grace)
			defer timer.Stop()
			deadline = timer.C
		}
	}
}

// exitCodeOf is 128 + the signal's number, as shells report it.
func exitCodeOf(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 130
}

// run executes the CLI and returns the process exit code.
func (a *app) run(ctx context.Context, args []string) int {
	stdin, stdout, stderr := a.f.IO.In, a.f.IO.Out, a.f.IO.ErrOut
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	defer a.f.Close()
	if err == nil {
		return cmdutil.ExitOK
	}
	var ee *cmdutil.ExitErr
	if errors.As(err, &ee) {
		if !ee.Printed && ee.Err != nil {
			fmt.Fprintln(stderr, "agenthost:", cmdutil.Shown(stderr, a.f.Redact(ee.Err.Error())))
		}
		return ee.Code
	}
	// cobra's own errors: unknown command, bad flags, wrong arg count.
	fmt.Fprintln(stderr, "agenthost:", cmdutil.Shown(stderr, a.f.Redact(err.Error())))
	return cmdutil.ExitUsage
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "agenthost",
		Short: "Host-side agent runtime: MCP connections, secure parameters, approvals",
		Long: "Host-side agent runtime: MCP connections, secure parameters, approvals.\n\n" +
			"Reference (in the source repository): docs/cli.md (commands, flags, JSON outputs, exit codes),\n" +
			"docs/config.md (configuration keys), docs/events.md (run output), docs/audit.md (audit log).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       host.Version, // enables --version; the template prints versionLine
	}
	root.SetVersionTemplate(version.Line() + "\n")
	root.PersistentFlags().StringVar(&a.f.ConfigPath, "config", "", "config file (default ./agenthost.yaml, then $XDG_CONFIG_HOME/agenthost/config.yaml; every key is described in docs/config.md)")
	root.PersistentFlags().StringVar(&a.f.LogLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		a.f.LogLevelSet = cmd.Flags().Changed("log-level")
	}
	root.AddCommand(
		servers.NewCmdServers(a.f, nil),
		tools.NewCmdTools(a.f, nil),
		call.NewCmdCall(a.f, nil),
		a.runCommand(),
		policy.NewCmdPolicy(a.f),
		demo.NewCmdDemo(a.f, nil),
		serve.NewCmdServe(a.f, nil),
		version.NewCmdVersion(a.f, nil),
		auth.NewCmdAuth(a.f),
		pins.NewCmdPins(a.f),
		approvals.NewCmdApprovals(a.f),
		sessions.NewCmdSessions(a.f),
		audit.NewCmdAudit(a.f),
		mcp.NewCmdMCP(a.f),
	)
	return root
}
