// Command agenthost-supervise is the agenthost CLI's small child
// supervisor: the CLI (agenthost and agenthost-full, beside which it is
// installed) runs it to start its stdio servers and hooks, each in a
// session of its own, and to end every process tree it started when a
// child exits or the CLI dies (package proctree, through
// internal/childproc/supervisor's initializer). It links nothing else, so
// its start is the exec of a small static binary (docs/PERFORMANCE.md,
// "The small supervisor"). A sandboxed child is started by the CLI's own
// binary, which holds the sandbox: asked for one, this program refuses.
package main

import (
	"os"

	// The supervisor runs from this package's initializer and exits there.
	_ "github.com/agenthost/agenthost/internal/childproc/supervisor"
)

func main() {
	os.Stderr.WriteString("agenthost-supervise: this is the agenthost CLI's child supervisor; agenthost starts it, with arguments it alone gives (docs/cli.md, \"Two binaries\")\n")
	os.Exit(2)
}
