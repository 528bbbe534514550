// Command fakellm is the scripted OpenAI-compatible chat-completions server
// used by the e2e tests; all behaviour lives in internal/modeltest.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/host/modeltest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := modeltest.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
