package main

import (
	"io"
	"os"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/ccstream"
)

// headlessFlags are the `run` flags of Claude Code's headless mode
// (docs/cli.md, "Headless, as Claude Code scripts expect").
type headlessFlags struct {
	permissionMode string
	includePartial bool
	prices         map[string]config.Price
}

// claudeStream is the writer of --output-format stream-json lines on w;
// nil for any other format.
func (a *app) claudeStream(w io.Writer, format outputFormat) *ccstream.Writer {
	if format != formatStreamJSON {
		return nil
	}
	cwd, _ := os.Getwd()
	return ccstream.New(w, ccstream.Options{
		CWD:            cwd,
		PermissionMode: a.headless.permissionMode,
		Prices:         a.headless.prices,
		IncludePartial: a.headless.includePartial,
	})
}
