// Package run is `agenthost run`: one-shot turns, Claude Code's headless
// flags and formats, saved sessions (--resume, --continue), and the seam of
// the REPL (run/repl, which only the full build links: docs/cli.md "The
// REPL", "Two binaries"). It prints host events; the turns themselves are
// host's.
package run

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// NewCmdRun is `agenthost run` without a REPL (the lean build's, which
// hands an interactive run over). Its options are its flags (session,
// headless, saved sessions); runF, when set, is called with them in place
// of the turn (tests).
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	return NewCmdRunWith(f, runF, nil)
}

// NewCmdRunWith is NewCmdRun with repl the REPL of a run on a terminal
// (run/repl.REPL in the full build).
func NewCmdRunWith(f *cmdutil.Factory, runF func(*RunOptions) error, repl REPL) *cobra.Command {
	a := &app{f: f, opts: &RunOptions{}, repl: repl}
	return a.runCommand(runF)
}

// REPL sets up the interactive session of a run on a terminal.
type REPL interface {
	// SetUp makes f ask approvals and servers' questions through the
	// REPL, before the host is built.
	SetUp(f *cmdutil.Factory, cfg *config.Config) Interactive
}

// Interactive is a REPL, set up.
type Interactive interface {
	// Run keeps one conversation, starting on sess, until the user
	// leaves. session are the run's session flags (a new conversation
	// starts with them); events, when set, prints an event in the run's
	// format (nil: text, through NewTextPrinter).
	Run(ctx context.Context, h *host.Host, sess *host.Session, cfgFile string, session *cmdutil.SessionFlags, events func(io.Writer) func(host.Event), opts host.TurnOptions) error
}

// app holds the CLI's Factory, the session flags of the command that runs
// and the REPL.
type app struct {
	f *cmdutil.Factory
	// opts are the flags of the run.
	opts *RunOptions
	// saved is the engine of a saved session (nil: the run is kept in
	// memory).
	saved cmdutil.SavedEngine

	// repl sets up the REPL (nil in the lean build); interactive is the
	// one set up for this run.
	repl        REPL
	interactive Interactive
}
