// Command mcptestserver is the secure-params MCP test server used by the e2e
// tests; all behaviour lives in internal/mcptest.
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
