package main

import (
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// app holds the CLI's Factory, the session flags of the command that runs
// and the REPL's state.
type app struct {
	f    *cmdutil.Factory
	sess cmdutil.SessionFlags

	// headless holds run's Claude Code flags.
	headless headlessFlags

	// The REPL's terminal program, its session and its saved answers
	// "always" (run on a terminal only).
	replUI      *replUI
	replSession *host.Session
	replLocal   *localAlways
}

func (a *app) addSessionFlags(cmd interface{}) {}
