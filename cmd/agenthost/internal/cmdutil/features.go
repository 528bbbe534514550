package cmdutil

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/rules/exprcall"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

// Features are the parts of agenthost that only some command lines use.
// Each is linked only into a build that sets it: cmd/agenthost-full sets
// every one (cmd/agenthost/internal/fullbuild), cmd/agenthost none, so
// that a command line that uses none of them (a one-shot run, tools, call,
// version) starts and runs without their libraries in its process. A
// command line that needs one this build lacks is handed over to the full
// build before it has printed anything (NeedsFullError; docs/cli.md "Two
// binaries").
type Features struct {
	// Databases opens approvals.store and audit.store, chaining audit
	// records with the key (approvals/stores.Databases).
	Databases func(chainKey []byte) compose.Databases
	// Telemetry sets up OpenTelemetry (host/otelobs.Compose).
	Telemetry compose.Telemetry
	// Plugins starts credential plugins (host/compose/credplugins.Start).
	Plugins compose.Plugins
	// Sessions are run's saved sessions (cmd/agenthost/internal/savedsessions).
	Sessions SavedSessions
	// Expressions is the engine of rules' when.expr
	// (approvals/rules/celexpr.Engine), registered by root.Main.
	Expressions exprcall.Engine
	// Commands are the commands only the full build has (FullOnly);
	// the lean build lists them with the same help line and hands them
	// over.
	Commands func(*Factory) []*cobra.Command
}

// Serve returns a NeedsFullError when a config that uses u needs a
// feature this build lacks, nil when it can serve it.
func (fs Features) Serve(u compose.Uses) error {
	switch {
	case u.Telemetry && fs.Telemetry == nil:
		return &NeedsFullError{What: "OpenTelemetry (the observability section or an OTEL_EXPORTER_OTLP_*ENDPOINT variable)"}
	case u.Plugins && fs.Plugins == nil:
		return &NeedsFullError{What: "credential plugins (the sources section)"}
	case u.Databases && fs.Databases == nil:
		return &NeedsFullError{What: "a database (approvals.store or audit.store)"}
	case u.Expressions && fs.Expressions == nil:
		return &NeedsFullError{What: "rule expressions (when.expr, CEL)"}
	}
	return nil
}

// NeedsFullError says that a command line needs a part of agenthost this
// build leaves out: the lean build's main hands the whole command line to
// the full build (cmd/agenthost-full) beside it.
type NeedsFullError struct {
	// What names the part, for the message when no full build is found.
	What string
}

func (e *NeedsFullError) Error() string {
	return fmt.Sprintf("this command line needs %s, which this build of agenthost leaves out", e.What)
}

// Durable is a durable engine the host runs its turns on
// (host/durable.Engine); the Factory closes it at exit.
type Durable interface {
	host.Durability
	Close() error
}

// SavedEngine is the durable engine of a saved session, which also records
// the session's line in the saved sessions' index.
type SavedEngine interface {
	Durable
	// Describe records the session's subject, folder and title.
	Describe(ctx context.Context, id, subject, dir, title string) error
}

// SavedSessions are the saved sessions of `run`.
type SavedSessions interface {
	// Open settles the id of the session of a run that saves (s; dir is
	// the folder, id --session-id's) and opens the engine that runs its
	// turns. resuming reports that its unfinished turns are taken up
	// first.
	Open(ctx context.Context, s compose.SavedSession, dir, id string) (_ SavedEngine, chosen string, resuming bool, _ error)
}

// FullOnly are the commands only the full build has, with the use and
// help lines both builds list them with.
var FullOnly = []struct{ Use, Short string }{
	{ServeUse, ServeShort},
	{SessionsUse, SessionsShort},
}

// The lines of the commands only the full build has.
const (
	ServeUse      = "serve [--listen ADDR]"
	ServeShort    = "Serve the HTTP API, the approvals page and webhooks (docs/cli.md, serve/openapi.yaml)"
	SessionsUse   = "sessions"
	SessionsShort = "List, show and delete the saved sessions of `run` (--resume, --continue)"
)

// HandOver is the lean build's stand-in for a command only the full build
// has: it takes the command line as it is and hands it over.
// `agenthost help NAME` is handed over too (AskedHandOver): the full
// build's help lists the command's flags, which the stand-in does not have.
func HandOver(f *Factory, use, short string) *cobra.Command {
	c := &cobra.Command{
		Use:                use,
		Short:              short,
		DisableFlagParsing: true, // the full build parses them, --help too
		RunE: func(cmd *cobra.Command, _ []string) error {
			return &NeedsFullError{What: "`agenthost " + cmd.Name() + "`"}
		},
	}
	c.SetHelpFunc(func(cmd *cobra.Command, _ []string) {
		f.askedHandOver = &NeedsFullError{What: "the help of `agenthost " + cmd.Name() + "`"}
	})
	return c
}

// AskedHandOver is the NeedsFullError a command asked for without
// returning it (the help of a command only the full build has); nil when
// none did.
func (f *Factory) AskedHandOver() *NeedsFullError { return f.askedHandOver }
