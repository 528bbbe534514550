// Package run is `agenthost run`: one-shot turns, Claude Code's headless
// flags and formats, saved sessions (--resume, --continue), and the REPL
// (a bubbletea program that owns the terminal, docs/cli.md "The REPL"). It
// prints host events; the turns themselves are host's.
package run

import (
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/spf13/cobra"
)

// NewCmdRun is `agenthost run`. Its options are its flags (session,
// headless, saved sessions); runF, when set, is called with them in place
// of the turn (tests).
func NewCmdRun(f *cmdutil.Factory, runF func(*RunOptions) error) *cobra.Command {
	a := &app{f: f, opts: &RunOptions{}}
	return a.runCommand(runF)
}

// app holds the CLI's Factory, the session flags of the command that runs
// and the REPL's state.
type app struct {
	f *cmdutil.Factory
	// opts are the flags of the run.
	opts *RunOptions

	// The REPL's terminal program, its session and its saved answers
	// "always" (run on a terminal only).
	// saved is the engine of a saved session (nil: the run is kept in
	// memory).
	saved cmdutil.SavedEngine

	replUI      *replUI
	replSession *host.Session
	replLocal   *localAlways
}
