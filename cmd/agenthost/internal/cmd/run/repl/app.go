// Package repl is the REPL of `agenthost run` on a terminal (docs/cli.md
// "The REPL"): a bubbletea program that owns the terminal, the editor and
// its history, the slash commands, the answers "always" kept beside the
// config, and the approval and elicitation questions asked through it. It
// prints a turn as run does (run.NewTextPrinter). Only the full build
// links it; the lean one hands an interactive run over (docs/cli.md "Two
// binaries").
package repl

import (
	"io"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/run"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// REPL sets up the REPL of a run; it is a run.REPL.
type REPL struct{}

// SetUp makes f ask approvals and servers' questions through the REPL's
// program, with the answers "always" kept beside the config.
func (REPL) SetUp(f *cmdutil.Factory, cfg *config.Config) run.Interactive {
	a := &app{f: f, ui: &replUI{done: make(chan struct{}), labels: map[string]string{}}}
	f.Elicitation = newTerminalElicitation(a.ui).ask
	a.local = newLocalAlways(cfg)
	f.Asker = a.ui
	f.PromptOptions = terminal.PromptOptions{Reasons: true, Detail: approvalDetail(a.ui, cfg)}
	if a.local.a.Offered() {
		f.PromptOptions.Always = a.local.always
	}
	return a
}

// app is one REPL: its program's handle, the answers "always", and what
// Run was given.
type app struct {
	f     *cmdutil.Factory
	ui    *replUI
	local *localAlways

	sess    *host.Session
	session *cmdutil.SessionFlags
	events  func(io.Writer) func(host.Event)
}
