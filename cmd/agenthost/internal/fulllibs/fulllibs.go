// Package fulllibs is the libraries the full build of the agenthost CLI
// links beyond the lean one, as cmdutil.Features: the approval and audit
// databases (SQLite, PostgreSQL), OpenTelemetry, credential plugins,
// saved sessions on the durable engine and CEL for rule expressions. cmd/agenthost/internal/fullbuild
// adds the full build's own commands; the commands' tests take these as
// they are (docs/cli.md, "Two binaries").
package fulllibs

import (
	"github.com/agenthost/agenthost/approvals/rules/celexpr"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/savedsessions"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/compose/credplugins"
	"github.com/agenthost/agenthost/host/otelobs"
)

// Features are every feature of the CLI but its full-only commands.
func Features() cmdutil.Features {
	return cmdutil.Features{
		Databases: func(chainKey []byte) compose.Databases { return stores.Databases{ChainKey: chainKey} },
		Telemetry: otelobs.Compose,
		Plugins:   credplugins.Start,
		Sessions:  savedsessions.Sessions{},
		// CEL for the rules' when.expr.
		Expressions: celexpr.Engine{},
	}
}
