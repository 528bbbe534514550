// Package cmdutil is what every command of the agenthost CLI shares: the
// Factory (the IO streams, the global flags and the one preamble
// config-or-URL → host → ad-hoc fallback → session, each built lazily
// and closed at exit), the session flags, the exit codes and the small
// printing helpers (escaping on a terminal, JSON documents). It decides
// nothing a library does not decide: flags in, host calls out.
package cmdutil

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/sibling"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Factory holds the global flags and builds what a command needs, each on
// first use; Close releases what it built. One Factory serves one command
// line.
type Factory struct {
	IO *IOStreams
	// Features are the parts of agenthost this build links (the full
	// build all, the lean one none).
	Features Features
	// HandOver, when set, runs a command line that needs a feature this
	// build lacks in the full build, returning its exit code (the lean
	// build's main; nil: the NeedsFullError is printed).
	HandOver func(*NeedsFullError) int
	// askedHandOver is set by a help only the full build can print.
	askedHandOver *NeedsFullError

	// ConfigPath is --config, LogLevel --log-level; LogLevelSet says that
	// --log-level was given.
	ConfigPath  string
	LogLevel    string
	LogLevelSet bool
	// ReportsServers is set by commands that print each server's error
	// themselves (servers, tools, call, mcp list/get): unless --log-level
	// was given, their logs start at error, so that no error is printed
	// twice.
	ReportsServers bool

	// What a command sets before its host is built.
	//
	// Elicitation asks servers' questions (the REPL's terminal); nil: as
	// --approve answers asks (see elicitation).
	Elicitation host.ElicitationFunc
	// Asker, with PromptOptions, is where the approval prompt asks (the
	// REPL); nil: the line prompt on stdin and stderr.
	Asker         terminal.Asker
	PromptOptions terminal.PromptOptions
	// AuditAlso also receives every audit record (serve's index).
	AuditAlso auditlog.Sink
	// Durable runs the host's turns durably and keeps its sessions (nil:
	// in memory). The Factory closes it at exit.
	Durable Durable
	// Supervisor is the child supervisor of the hosts it builds (nil: the
	// running binary, childproc.Self, with the small supervisor beside it
	// when there is one, chosen once: childSupervisor), the one
	// PrestartSupervisor starts.
	Supervisor *childproc.Supervisor

	config         *config.Config
	noted          bool // the missing config file was said
	redactor       *bindings.Redactor
	host           *host.Host
	input          *terminal.Input
	supervisorOnce sync.Once
	smallFile      *os.File // the small supervisor, open for as long as it may be run

	interruptMu sync.Mutex
	interrupt   func()
}

// New is a Factory on io, with the global flags' defaults.
func New(io *IOStreams) *Factory { return &Factory{IO: io, LogLevel: "warn"} }

// Logger is the logger --log-level asks for, writing to stderr.
func (f *Factory) Logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.LogLevel)); err != nil {
		return nil, UsageErr(fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", f.LogLevel))
	}
	if f.ReportsServers && !f.LogLevelSet {
		level = max(level, slog.LevelError)
	}
	return slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level})), nil
}

// Config reads --config (or the default locations) once; a missing file
// is said on stderr and read as an empty configuration.
func (f *Factory) Config() (*config.Config, error) {
	cfg, err := f.load()
	if err != nil {
		return nil, err
	}
	if !f.noted {
		f.noted = true
		if cfg.File == "" {
			fmt.Fprintf(f.IO.ErrOut, "agenthost: no config file found (searched %s); running with no servers. Pass --config FILE; docs/config.md describes the file.\n",
				strings.Join(config.DefaultPaths(), ", "))
		}
	}
	return cfg, nil
}

// load reads the configuration once, saying nothing.
func (f *Factory) load() (*config.Config, error) {
	if f.config != nil {
		return f.config, nil
	}
	cfg, err := config.LoadDefault(f.ConfigPath)
	if err == nil {
		err = cfg.CheckSources() // the CLI supplies no source of its own
	}
	if err != nil {
		return nil, UsageErr(err)
	}
	f.config = cfg
	return cfg, nil
}

// CheckFeatures is the NeedsFullError of a configuration that uses a
// feature this build lacks (compose.UsesOf), before the command has
// printed anything; nil otherwise, and when the configuration cannot be
// read (the command says why, as the full build would).
func (f *Factory) CheckFeatures() error {
	cfg, err := f.load()
	if err != nil {
		return nil
	}
	return f.Features.Serve(compose.UsesOf(cfg, nil))
}

// ConfigWith is Config, checking that a server named on the command line
// (if any) is configured; flag names it for the message.
func (f *Factory) ConfigWith(server, flag string) (*config.Config, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	if server != "" {
		if _, ok := cfg.MCPServers[server]; !ok {
			return nil, UsageErr(fmt.Errorf("%sno server named %q in the config", flag, server))
		}
	}
	return cfg, nil
}

// Host builds the host for cfg, acting for s's subject (s may be nil);
// the Factory closes it at exit. It is the CLI's one construction of a
// host: every command's host, and the ad-hoc fallback's, is built here.
func (f *Factory) Host(cfg *config.Config, s *SessionFlags) (*host.Host, error) {
	if s == nil {
		s = &SessionFlags{}
	}
	logger, err := f.Logger()
	if err != nil {
		return nil, err
	}
	f.redactor = bindings.NewRedactor()
	store, err := TokenStore()
	if err != nil {
		return nil, err
	}
	chainKey, err := host.AuditChainKey(cfg, nil)
	if err != nil {
		return nil, UsageErr(err)
	}
	// Telemetry is set up only when the observability section or an
	// OTEL_EXPORTER_OTLP_*ENDPOINT variable turns it on (docs/config.md);
	// the host flushes it when it closes.
	opts := compose.Options{Host: host.Options{Logger: logger, Redactor: f.redactor, Elicitation: f.elicitation(s.Approve),
		ChildSupervisor: f.childSupervisor(), AuditAlso: f.AuditAlso},
		Databases: f.Databases(chainKey), Telemetry: f.Features.Telemetry, Plugins: f.Features.Plugins,
		OAuth: compose.OAuthOptions{Store: store, Subject: s.Subject, Login: f.oauthLogin}}
	if f.Durable != nil {
		opts.Host.Durability = f.Durable
	}
	h, err := compose.New(context.Background(), cfg, opts)
	if err != nil {
		// The host names the key (sources.vault.sha256, audit.path); the
		// message names the file too (docs/config.md).
		if cfg.File != "" && host.KindOf(err) == host.KindConfig {
			err = fmt.Errorf("%s: %w", cfg.File, err)
		}
		return nil, UsageErr(err)
	}
	f.host = h
	return h, nil
}

// childSupervisor is the Factory's Supervisor, the running binary unless
// one was given: one per Factory, so that the hosts and PrestartSupervisor
// share its long-lived process. The running binary supervises through the
// small supervisor beside it (SupervisorName) when that is a regular file
// of this very build; it is run from the descriptor it was checked
// through, so a file replaced after the check is not the one run
// (sibling). Without one, or with another build's, the running binary
// supervises, as before: the guarantees are the same, only the start
// costs more.
func (f *Factory) childSupervisor() *childproc.Supervisor {
	f.supervisorOnce.Do(func() {
		if f.Supervisor != nil {
			return
		}
		f.Supervisor = childproc.Self()
		if f.Supervisor == nil {
			return
		}
		path, err := sibling.Beside(SupervisorName)
		if err == nil {
			f.smallFile, err = sibling.Open(path, SupervisorPackage)
		}
		if err != nil {
			if logger, lerr := f.Logger(); lerr == nil {
				logger.Debug("the CLI supervises its children itself", "reason", err)
			}
			return
		}
		f.Supervisor.Small = sibling.ExecPath(f.smallFile)
	})
	return f.Supervisor
}

// SupervisorName is the small child supervisor's executable name, installed
// beside the CLI's, and SupervisorPackage its main package.
const (
	SupervisorName    = "agenthost-supervise"
	SupervisorPackage = "github.com/agenthost/agenthost/cmd/agenthost/agenthost-supervise"
)

// PrestartSupervisor starts the long-lived child supervisor now when cfg
// has a server it will start (server, when not "", is the only one the
// command connects): an enabled stdio server outside a sandbox
// (config.StartsUnsandboxedStdio), which the supervisor spawns. Called
// before the host is built, the supervisor's start overlaps building the
// host and the session instead of holding up the first server's start in
// Connect (docs/PERFORMANCE.md, "The supervisor started before connect").
func (f *Factory) PrestartSupervisor(cfg *config.Config, server string) {
	if cfg.StartsUnsandboxedStdio(server) {
		f.childSupervisor().Prestart()
	}
}

// Databases opens the approval and audit databases (nil in a build
// without them), chaining audit records with chainKey.
func (f *Factory) Databases(chainKey []byte) compose.Databases {
	if f.Features.Databases == nil {
		return nil
	}
	return f.Features.Databases(chainKey)
}

// Redact masks every secure value the host has resolved so far.
func (f *Factory) Redact(s string) string {
	if f.redactor == nil {
		return s
	}
	return f.redactor.Redact(s)
}

// TerminalInput is the shared reader of stdin's lines: whoever asks (an
// open approval question, a server's question) gets the next line, and a
// question interrupted by Ctrl-C leaves it to the next asker.
func (f *Factory) TerminalInput() *terminal.Input {
	if f.input == nil {
		f.input = terminal.NewInput(f.IO.In)
	}
	return f.input
}

// SetInterrupt installs what Ctrl-C does while a REPL turn runs (nil: none).
func (f *Factory) SetInterrupt(fn func()) {
	f.interruptMu.Lock()
	defer f.interruptMu.Unlock()
	f.interrupt = fn
}

// InterruptTurn ends the running REPL turn, reporting whether there was one.
func (f *Factory) InterruptTurn() bool {
	f.interruptMu.Lock()
	defer f.interruptMu.Unlock()
	if f.interrupt == nil {
		return false
	}
	f.interrupt()
	f.interrupt = nil
	return true
}

// Close releases what the Factory built: the host (which flushes
// telemetry), the durable engine and the terminal reader, each within a
// bound, and the small supervisor's file.
func (f *Factory) Close() {
	if f.host != nil {
		CloseWithin(f.IO.ErrOut, CloseTimeout, f.host.Close)
	}
	if f.Durable != nil {
		CloseWithin(f.IO.ErrOut, CloseTimeout, f.Durable.Close)
	}
	if f.input != nil {
		_ = f.input.Close()
	}
	if f.smallFile != nil {
		_ = f.smallFile.Close() // the hosts are closed: no child starts now
	}
}

// CloseTimeout bounds the host's shutdown at exit. Closing a stdio server
// takes at most a few seconds (stdin closed, SIGTERM, SIGKILL, then its
// process tree); past this the CLI exits anyway, and the child supervisor
// ends what is left when this process is gone.
const CloseTimeout = 10 * time.Second

// CloseWithin runs closeFn, waiting at most d for it to return.
func CloseWithin(stderr io.Writer, d time.Duration, closeFn func() error) {
	done := make(chan struct{})
	go func() {
		_ = closeFn()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		fmt.Fprintf(stderr, "agenthost: shutting down took longer than %s; exiting without waiting for the servers to stop\n", d)
	}
}
