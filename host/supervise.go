package host

import "github.com/agenthost/agenthost/internal/childproc"

// MaybeSupervise makes the program the child supervisor when it was started
// as one (Options.ChildSupervisor re-executes the program for each stdio
// server, plugin and hook): it then runs that child, ends its whole tree
// when it exits or when the host dies, and exits with the child's status.
// Otherwise it returns at once. Call it first thing in main.
func MaybeSupervise() { childproc.MaybeSupervise() }

// SelfSupervisor is the running program as the child supervisor, for
// Options.ChildSupervisor in a program that calls MaybeSupervise first
// thing in main. It is nil where a supervisor cannot learn of the host's
// death (outside Linux).
func SelfSupervisor() *childproc.Supervisor { return childproc.Self() }
