// Command agenthost-full is the CLI of the agenthost runtime with every
// feature linked: the same commands, flags and output as agenthost, plus
// serve, saved sessions, the approval and audit databases, OpenTelemetry
// and credential plugins. agenthost runs it in its own place for the
// command lines that need them, so it is installed beside agenthost
// (`go install github.com/agenthost/agenthost/cmd/...@VERSION`); it can
// also be run directly (docs/cli.md, "Two binaries").
package main

import (
	"os"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/root"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/fullbuild"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/startgc"
	"github.com/agenthost/agenthost/internal/childproc"

	// As in cmd/agenthost: started as a child supervisor, the program is
	// only that.
	_ "github.com/agenthost/agenthost/internal/childproc/supervisor"
)

func main() {
	startgc.Restore()
	childproc.MaybeSupervise()
	os.Exit(root.Main(os.Args[1:], fullbuild.Features(), nil))
}
