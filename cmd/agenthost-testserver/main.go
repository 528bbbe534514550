// Command agenthost-testserver is an MCP server with secure parameters
// (SEP-3221) to try agenthost against: a credential plugin, a binding, an
// approval rule. `--example` serves two tools that take the secure
// parameter "token" (whoami answers with the secure arguments it received;
// delete_item is one an approval rule asks for), `--tools FILE` a tool set
// of your own, over stdio (the default) or `--transport http`; `--record
// FILE` appends every message it receives, secure values included. It is
// also the server of the project's e2e tests. Install it with
//
//	go install github.com/agenthost/agenthost/cmd/agenthost-testserver@latest
//
// All behaviour lives in host/mcptest (its package comment lists the
// tools file's format and the test behaviours); -h lists the flags.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/host/mcptest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := mcptest.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
