package host

import "github.com/agenthost/agenthost/internal/childproc"

// MaybeSupervise makes the program the child supervisor when it was started
// as one (Options.ChildSupervisor re-executes the program once per host, to
// start every stdio server, plugin and hook on request, and once more for
// each sandboxed child): it then starts and watches the children, ends each
// child's whole tree when the child exits or when the host dies, and exits.
// Otherwise it returns at once. Call it first thing in main.
func MaybeSupervise() { childproc.MaybeSupervise() }

// SelfSupervisor is the running program as the child supervisor, for
// Options.ChildSupervisor in a program that calls MaybeSupervise first
// thing in main. It is nil where a supervisor cannot learn of the host's
// death (outside Linux).
func SelfSupervisor() *childproc.Supervisor { return childproc.Self() }
