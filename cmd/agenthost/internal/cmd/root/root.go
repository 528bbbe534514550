// Package root is the agenthost command: the global flags, the commands
// below it, the run of a command line (exit codes, the error printed) and
// the signals that stop it.
package root

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/audit"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/auth"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/call"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/demo"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/pins"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/policy"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/run"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/servers"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/tools"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/version"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

// shutdownGrace is how long the process may take to stop after SIGINT or
// SIGTERM cancelled the command. Every blocking step watches the context,
// but a CPU-bound one cannot; past the grace period (or at a second signal)
// the process exits anyway, with 128 + the signal's number.
const shutdownGrace = 5 * time.Second

// Main runs the command line on the process's streams with the features
// the build links, SIGINT and SIGTERM cancelling it (watchSignals), and
// returns the exit code. handOver, when set, takes a command line that
// needs a feature this build lacks (the lean build's: it runs the full
// build in this process's place).
func Main(args []string, features cmdutil.Features, handOver func(*cmdutil.NeedsFullError) int) int {
	ctx, cancel := context.WithCancel(context.Background())
	f := cmdutil.New(cmdutil.System())
	f.Features, f.HandOver = features, handOver
	if features.Expressions != nil {
		rules.UseExprEngine(features.Expressions)
	}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	stopped := make(chan struct{})
	go watchSignals(signals, stopped, f.InterruptTurn, cancel, shutdownGrace, func(code int, msg string) {
		fmt.Fprintln(os.Stderr, "agenthost:", msg)
		os.Exit(code)
	})
	code := Execute(ctx, f, args)
	signal.Stop(signals)
	close(stopped)
	cancel()
	return code
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

// Execute runs the command line args on f and returns the process exit
// code: the code an error carries, 2 for cobra's own (unknown command, bad
// flags, wrong arg count); the message is printed unless it was already.
func Execute(ctx context.Context, f *cmdutil.Factory, args []string) int {
	stdin, stdout, stderr := f.IO.In, f.IO.Out, f.IO.ErrOut
	root := NewCmdRoot(f)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if asked := f.AskedHandOver(); err == nil && asked != nil {
		err = asked
	}
	var nf *cmdutil.NeedsFullError
	if errors.As(err, &nf) && f.HandOver != nil {
		// Nothing was printed or started: the full build takes the
		// command line from the start.
		f.Close()
		return f.HandOver(nf)
	}
	defer f.Close()
	if err == nil {
		return cmdutil.ExitOK
	}
	var ee *cmdutil.ExitErr
	if errors.As(err, &ee) {
		if !ee.Printed && ee.Err != nil {
			fmt.Fprintln(stderr, "agenthost:", cmdutil.Shown(stderr, f.Redact(ee.Err.Error())))
		}
		return ee.Code
	}
	// cobra's own errors: unknown command, bad flags, wrong arg count.
	fmt.Fprintln(stderr, "agenthost:", cmdutil.Shown(stderr, f.Redact(err.Error())))
	return cmdutil.ExitUsage
}

// NewCmdRoot is the agenthost command with every command below it; its
// persistent flags are the Factory's global flags.
func NewCmdRoot(f *cmdutil.Factory) *cobra.Command {
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
	// The line is made when --version prints it: reading the build's
	// module list is not every command's cost.
	cobra.AddTemplateFunc("versionLine", version.Line)
	root.SetVersionTemplate("{{versionLine}}\n")
	root.PersistentFlags().StringVar(&f.ConfigPath, "config", "", "config file (default ./agenthost.yaml, then $XDG_CONFIG_HOME/agenthost/config.yaml; every key is described in docs/config.md)")
	root.PersistentFlags().StringVar(&f.LogLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		f.LogLevelSet = cmd.Flags().Changed("log-level")
		if readsConfig(cmd) {
			// A config that uses a feature this build lacks is handed
			// over before the command says anything.
			return f.CheckFeatures()
		}
		return nil
	}
	root.AddCommand(
		servers.NewCmdServers(f, nil),
		tools.NewCmdTools(f, nil),
		call.NewCmdCall(f, nil),
		run.NewCmdRun(f, nil),
		policy.NewCmdPolicy(f),
		demo.NewCmdDemo(f, nil),
		version.NewCmdVersion(f, nil),
		auth.NewCmdAuth(f),
		pins.NewCmdPins(f),
		approvals.NewCmdApprovals(f),
		audit.NewCmdAudit(f),
		mcp.NewCmdMCP(f),
	)
	if f.Features.Commands != nil {
		// The full build's commands: those only it has, and its own
		// run (with the REPL) in place of the lean one.
		for _, c := range f.Features.Commands(f) {
			if old, _, err := root.Find([]string{c.Name()}); err == nil && old != root {
				root.RemoveCommand(old)
			}
			root.AddCommand(c)
		}
	} else {
		for _, c := range cmdutil.FullOnly {
			root.AddCommand(cmdutil.HandOver(f, c.Use, c.Short))
		}
	}
	return root
}

// readsConfig reports whether cmd may read the configuration: every
// command but version, help and shell completion.
func readsConfig(cmd *cobra.Command) bool {
	for cmd.HasParent() && cmd.Parent().HasParent() {
		cmd = cmd.Parent()
	}
	switch cmd.Name() {
	case "version", "help", "completion", cobra.ShellCompRequestCmd, cobra.ShellCompNoDescRequestCmd:
		return false
	}
	return true
}
