// Package compose is agenthost's composition root: it turns a
// config.Config into a running host.Host. It builds what the config
// names and package host is only given: the model (the go-openai client
// of the llm section), the approval and audit stores (approvals.store,
// audit.store, through Options.Databases), the credential plugins of the
// sources section, the OAuth clients of servers reached by url, and
// OpenTelemetry (the observability section). It also holds the helpers
// of the agenthost CLI that concern those parts (OpenApprovalStore,
// VerifyAudit, NewOAuthClient, OAuthFromEnv, BrowserOpener), and the
// configuration of a server reached at a URL with no config file: its
// servers, its policy and its fallback to legacy SSE (AdHocConfig,
// ConnectAdHoc); and the answers "always" given at a terminal's approval
// question, kept beside the configuration file (AlwaysAnswers), and which
// saved session a run takes up or keeps (SavedSession).
//
// The parts only some configs use are given, not linked: telemetry
// (Options.Telemetry, host/otelobs.Compose), credential plugins
// (Options.Plugins, host/compose/credplugins.Start) and databases
// (Options.Databases, approvals/stores.Databases). A program that leaves
// one out links none of its SDK, and a config that uses it is then a
// configuration error (Uses says which a config uses). A program that
// wires a host by hand calls host.New with the parts it chose instead, and
// links none of these (docs/library.md).
package compose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/internal/closer"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Options configure New.
type Options struct {
	// Host are passed on to host.New (Config is New's cfg). What New
	// builds fills only the fields left unset: a Model, an ApprovalStore,
	// an Audit or AuditDatabase, an Authorizer or an Observer given here
	// is used as it is, and a source in Host.Sources stands for the
	// plugin of that name.
	Host host.Options
	// Databases opens approvals.store and audit.store when the config
	// names them; approvals/stores.Databases{} opens SQLite and
	// PostgreSQL. Nil links no driver, and a config naming a store is
	// then a configuration error.
	Databases Databases
	// OAuth configures the MCP authorization flow of the servers reached
	// by url (see OAuthOptions).
	OAuth OAuthOptions
	// Telemetry sets up OpenTelemetry when the observability section (or
	// an OTEL_EXPORTER_OTLP_*ENDPOINT variable) turns it on and
	// Host.Observer is nil; the host's Close flushes it, within
	// TelemetryFlushTimeout. host/otelobs.Compose is the one agenthost
	// has. Nil leaves telemetry off whatever the config says (a library
	// chooses its own observer).
	Telemetry Telemetry
	// Plugins starts the credential plugins of the sources section
	// (host/compose/credplugins.Start). Nil starts none: a config naming
	// a plugin that Host.Sources does not supply is then a configuration
	// error.
	Plugins Plugins
}

// Telemetry sets up OpenTelemetry for the observability section: the
// host's observer, and the flush its Close calls. It returns a nil
// observer when the section and the environment leave telemetry off
// (config.Observability.On).
type Telemetry func(ctx context.Context, obs config.Observability, logger *slog.Logger) (host.Observer, func(context.Context) error, error)

// Plugins starts a credential source for every plugin of cfg's sources
// section that given does not supply, and returns all sources by name
// with what the host must close, also when it fails.
type Plugins func(cfg *config.Config, given map[string]bindings.Source, o PluginOptions) (map[string]bindings.Source, []io.Closer, error)

// PluginOptions are what a started plugin reports to and runs under.
type PluginOptions struct {
	// Logger receives the plugins' log lines (redacting).
	Logger *slog.Logger
	// Redactor masks the values the plugins resolve.
	Redactor *bindings.Redactor
	// Supervisor starts the plugin processes (host.Options.ChildSupervisor).
	Supervisor *childproc.Supervisor
	// Lifecycle, when set, is told of each plugin's restarts.
	Lifecycle host.LifecycleObserver
}

// Uses says which of the parts Options gives a config uses.
type Uses struct {
	// Telemetry: the observability section or the environment turns
	// OpenTelemetry on (config.Observability.On).
	Telemetry bool
	// Plugins: the sources section names a credential plugin.
	Plugins bool
	// Databases: approvals.store or audit.store names a database.
	Databases bool
	// Expressions: a rule (the user's or the managed policy's) has a
	// when.expr, which needs the expression engine registered
	// (rules.UseExprEngine, approvals/rules/celexpr).
	Expressions bool
}

// UsesOf is what cfg uses; lookupEnv (nil: os.LookupEnv) is the
// environment telemetry is read from.
func UsesOf(cfg *config.Config, lookupEnv func(string) (string, bool)) Uses {
	u := Uses{Telemetry: cfg.Observability.On(lookupEnv), Databases: cfg.Approvals.Store != "" || cfg.Audit.Store != ""}
	for _, sc := range cfg.Sources {
		if sc != nil {
			u.Plugins = true
		}
	}
	rs := cfg.Approvals.Rules
	if cfg.Managed != nil {
		rs = append(slices.Clip(rs), cfg.Managed.Approvals.Rules...)
	}
	for _, r := range rs {
		if r.When.Expr != "" {
			u.Expressions = true
		}
	}
	return u
}

// TelemetryFlushTimeout bounds the flush of the telemetry New set up,
// at the host's Close: an unreachable collector does not hold it up.
const TelemetryFlushTimeout = 5 * time.Second

// New builds the host cfg describes. ctx bounds the opening of stores and
// telemetry, not the host's life. What it opened is closed by the host's
// Close, or by New itself when a later step fails.
func New(ctx context.Context, cfg *config.Config, opts Options) (*host.Host, error) {
	ho, err := build(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	// From here the host owns what build opened: host.New closes it if
	// it fails.
	return host.New(ho)
}

// build makes the host's options: opts.Host with what the config names
// filled in, and what it opened in Owned. When it fails it has closed
// what it opened.
func build(ctx context.Context, cfg *config.Config, opts Options) (_ host.Options, err error) {
	if cfg == nil {
		return host.Options{}, errors.New("compose: no config")
	}
	ho := opts.Host
	ho.Config = cfg
	if ho.Redactor == nil {
		ho.Redactor = bindings.NewRedactor()
	}
	logger := slog.New(bindings.NewRedactingHandler(orDiscard(ho.Logger).Handler(), ho.Redactor))
	var owned closer.Stack
	defer func() {
		if err != nil {
			_ = owned.Close()
		}
	}()
	if err := setupTelemetry(ctx, cfg, opts.Telemetry, logger, &ho, &owned); err != nil {
		return ho, err
	}
	if ho.Authorizer == nil {
		a, err := newAuthorizer(cfg, opts.OAuth)
		if err != nil {
			return ho, err
		}
		if a != nil {
			ho.Authorizer = a
		}
	}
	if ho.Model == nil {
		ho.Model = newModel(cfg.LLM, ho.Observer)
	}
	lifecycle, _ := ho.Observer.(host.LifecycleObserver)
	if ho.Sources, err = startPlugins(cfg, opts.Plugins, ho.Sources, PluginOptions{Logger: logger, Redactor: ho.Redactor, Supervisor: ho.ChildSupervisor, Lifecycle: lifecycle}, &owned); err != nil {
		return ho, err
	}
	if err := openStores(ctx, cfg, opts.Databases, &ho, &owned); err != nil {
		return ho, err
	}
	ho.Owned = append(owned, ho.Owned...)
	return ho, nil
}

// newModel is the go-openai client of the llm section; nil when it names
// no model. It propagates the observer's trace context to the endpoint.
func newModel(llm config.LLM, obs host.Observer) model.LLM {
	if llm.Model == "" {
		return nil
	}
	mo := openaimodel.Options{BaseURL: llm.BaseURL, APIKey: llm.APIKey, Timeout: llm.Timeout}
	if obs != nil {
		mo.Propagate = func(ctx context.Context, header http.Header) {
			if tp, ts := obs.TraceContext(ctx); tp != "" {
				header.Set("traceparent", tp)
				if ts != "" {
					header.Set("tracestate", ts)
				}
			}
		}
	}
	return openaimodel.New(mo)
}

// setupTelemetry sets up OpenTelemetry as the host's observer when asked
// to and turned on, pushing its bounded flush on owned.
func setupTelemetry(ctx context.Context, cfg *config.Config, setup Telemetry, logger *slog.Logger, ho *host.Options, owned *closer.Stack) error {
	if setup == nil || ho.Observer != nil {
		return nil
	}
	obs, shutdown, err := setup(ctx, cfg.Observability, logger)
	if err != nil || obs == nil {
		return err
	}
	if shutdown != nil {
		owned.Push(closer.Func(func() error {
			ctx, cancel := context.WithTimeout(context.Background(), TelemetryFlushTimeout)
			defer cancel()
			return shutdown(ctx)
		}))
	}
	ho.Observer = obs
	return nil
}

// startPlugins returns given with a source for every plugin of the
// sources section it does not supply, started by start; it pushes what
// they own on owned. A plugin to start with no start is a configuration
// error naming its key.
func startPlugins(cfg *config.Config, start Plugins, given map[string]bindings.Source, o PluginOptions, owned *closer.Stack) (map[string]bindings.Source, error) {
	if start == nil {
		for _, name := range slices.Sorted(maps.Keys(cfg.Sources)) { // the first by name, every time
			if _, ok := given[name]; !ok && cfg.Sources[name] != nil {
				return nil, configErr(fmt.Errorf("sources.%s names a credential plugin, but this program starts none: pass compose.Options.Plugins (host/compose/credplugins.Start; docs/library.md)", name))
			}
		}
		return given, nil
	}
	all, started, err := start(cfg, given, o)
	for _, c := range started {
		owned.Push(c)
	}
	return all, err
}

// orDiscard is l, or a logger that discards when l is nil.
func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

// configErr is err as a configuration error (host.KindConfig).
func configErr(err error) error {
	return &host.Error{Kind: host.KindConfig, Message: err.Error(), Err: err}
}
