// Command fakellm is the scripted OpenAI-compatible chat-completions server
// used by the e2e tests; all behaviour lives in internal/fakellm.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/agenthost/agenthost/internal/fakellm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := fakellm.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
