package host

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/argschema"
	"github.com/agenthost/agenthost/host/internal/auditsink"
	"github.com/agenthost/agenthost/host/internal/closer"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/internal/pinstate"
	"github.com/agenthost/agenthost/host/internal/secureargs"
	"github.com/agenthost/agenthost/host/internal/taint"
	"github.com/agenthost/agenthost/host/internal/views"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Version is agenthost's version, reported to servers as clientInfo.
var Version = "0.1.0"

// Options configure a Host. Only Config is required. The host builds no
// model, opens no database, starts no credential plugin, makes no OAuth
// client and sets up no telemetry: it is given them here. compose.New
// builds all of them from a config (docs/library.md).
type Options struct {
	Config *config.Config
	// Logger receives operator logs. It is wrapped so that every registered
	// secure value is redacted. Nil discards logs.
	Logger *slog.Logger
	// Sources are credential sources beyond the built-ins, by the name
	// bindings use in `source:` (plugins, or a backend's own Go code).
	// Every credential plugin the config's sources section names must be
	// among them (compose.New starts them): the host starts none.
	Sources map[string]bindings.Source
	// Redactor receives every secret/internal value resolved; nil makes a
	// new one. Share one Redactor with anything else that prints.
	Redactor *bindings.Redactor
	// Elicitation answers servers' elicitation requests (including
	// input_required rounds). Nil declines them.
	Elicitation ElicitationFunc
	// Model is the agent loop's model (package host/model/openaimodel
	// speaks the OpenAI chat completions API; compose.New builds it from
	// the config's llm section). Nil: a turn fails with ErrNoModel; the
	// rest of the host (views, calls) works without one.
	Model model.LLM
	// ModelName overrides llm.model.
	ModelName string
	// SystemPrompt is sent first in every model request; empty takes
	// llm.systemPrompt from the config.
	SystemPrompt string
	// Approver answers `ask` decisions for sessions that bring none; nil
	// denies them (the non-interactive default).
	Approver approvals.Approver
	// Audit receives one record per tool-call decision; nil opens the
	// config's audit.path (empty path: records are discarded, with a
	// warning) beside AuditDatabase. The host closes a file it opened,
	// not a sink passed here.
	Audit auditlog.Sink
	// AuditDatabase is the sink of audit.store's database, written after
	// audit.path's file (alone when audit.path is empty); unused when
	// Audit is set. Nil with audit.store set (and no Audit) is a
	// configuration error. The host never closes it.
	AuditDatabase auditlog.Sink
	// AuditAlso, when set, receives every audit record too, after Audit
	// (or the config's audit.path); a failure stops the call like Audit's.
	// The host never closes it. agenthost serve indexes records with it.
	AuditAlso auditlog.Sink
	// ApprovalStore keeps approval requests and session grants where every
	// replica sees them (`--approve wait`, `agenthost approvals`). Nil
	// with approvals.store set is a configuration error. The host never
	// closes it.
	ApprovalStore approvals.Store
	// Transports supply the connection of configured servers that live in
	// the embedding process (for example mcp-go's
	// transport.NewInProcessTransport over a server.MCPServer), by server
	// name. The server must still have a config entry, which gives its
	// timeouts, tool filter and protocol version; its command or URL is
	// not used (a config built in Go may leave both empty; a config file
	// must name one to validate). The factory is called on every
	// (re)connect and must return a fresh, unstarted transport.
	Transports map[string]TransportFactory
	// ChildSupervisor, when set, runs every stdio server, plugin and hook
	// under a supervisor process that ends the child's whole process tree
	// when the child exits, when it is stopped, and when the host dies
	// (even by SIGKILL). Without it, Close ends each child's tree (a hook's
	// when the hook exits), and on Linux a child dies with the host but the
	// processes it started may not. The
	// agenthost CLI sets childproc.Self() (it calls childproc.MaybeSupervise
	// first thing in main); a program embedding the host can do the same.
	ChildSupervisor *childproc.Supervisor
	// Authorizer authorizes the requests of servers reached by url (the
	// MCP authorization flow); nil sends them as they are. compose.New
	// builds one from the servers' oauth blocks (compose.OAuthOptions).
	Authorizer Authorizer
	// Observer receives telemetry hooks (turns, model requests, tool
	// calls, MCP requests, approval decisions, credential resolutions) and
	// propagates the trace context to servers and the model endpoint; nil,
	// the default, observes nothing at no cost. Package host/otelobs
	// implements it with OpenTelemetry.
	Observer Observer
	// Durability runs turns as durable workflows whose steps are
	// checkpointed in a database, so that a turn, and an approval it
	// waits for, survive a restart (Session.Resume takes them up); sessions
	// without a History keep their conversation in its History. Nil, the
	// default, runs turns in memory. Package host/durable/dbosdurable
	// implements it with DBOS Transact on PostgreSQL or SQLite. The host
	// never closes it: close it after the host. docs/durable.md.
	Durability Durability
	// Owned are closed by Close after the host has stopped (and by New
	// when it fails), last first: what was opened for this host alone.
	// compose.New hands over the plugins, stores and telemetry it opened.
	Owned []io.Closer
}

// TransportFactory makes a new, unstarted transport to one server.
type TransportFactory func() (transport.Interface, error)

// ElicitationFunc answers a server's request for user input.
type ElicitationFunc func(ctx context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error)

// Host owns the server connections and the catalog. It is safe for
// concurrent use by many sessions.
type Host struct {
	cfg      *config.Config
	logger   *slog.Logger
	redactor *bindings.Redactor
	binder   *bindings.Binder
	// secureSrc is what sessions resolve their secure values with.
	secureSrc *secureargs.Source
	args      argschema.Checker

	policy   *rules.Policy
	approver approvals.Approver
	audit    auditlog.Sink
	// unrecorded is audit when it records nothing (audit.path and
	// audit.store empty), else nil.
	unrecorded *auditsink.Unrecorded
	// record is audit as the call pipeline writes to it (arguments masked).
	record auditlog.Sink
	store  approvals.Store

	model        model.LLM
	modelName    string
	systemPrompt string

	obs Observer // nil: no telemetry

	// durable runs turns durably (nil: in memory); attached are its
	// turns that have a caller in this process.
	durable  Durability
	attached attachments

	life   context.Context
	cancel context.CancelFunc

	conns map[string]*mcpconn.Conn
	names []string
	// auth authorizes the requests of servers reached by url (nil: none).
	auth Authorizer
	// owned is what Close closes after the servers, last first.
	owned closer.Stack

	// maxModelResult bounds a tool result's text given to the model.
	maxModelResult int64

	// hooks runs the configured PreToolUse/PostToolUse hooks (nil: none).
	hooks *hooks.Runner
	// pins is the lock file of pinned tool definitions (pinned.go).
	pins *pinstate.State
	// pipeline is the call pipeline's first stage (pipeline.go).
	pipeline stage

	// views are the exposed names and the session verdicts its sessions
	// share (package views).
	views views.Shared

	// taint: each server's tools whose definitions hold a protected value
	// or pinning hides (package taint).
	taint *taint.Checker

	closeOnce sync.Once
}

// New builds a Host from a validated config. It does not connect; call
// Connect (or let the first call connect lazily). When it fails it has
// closed Options.Owned and everything it opened.
func New(opts Options) (_ *Host, err error) {
	owned := closer.Stack(slices.Clone(opts.Owned))
	defer func() {
		if err != nil {
			_ = owned.Close()
		}
	}()
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	cfg := opts.Config
	redactor := cmp.Or(opts.Redactor, bindings.NewRedactor())
	logger := redactingLogger(opts.Logger, redactor)
	binder, err := newBinder(cfg, opts, logger, redactor)
	if err != nil {
		return nil, err
	}
	owned.Push(binder)
	policy, err := newPolicy(cfg)
	if err != nil {
		return nil, err
	}
	hookRunner, err := newHookRunner(cfg.Hooks, cfg.File, opts.ChildSupervisor)
	if err != nil {
		return nil, hosterr.Config(err)
	}
	pinState, err := pinstate.New(cfg)
	if err != nil {
		return nil, hosterr.Config(err)
	}
	store, err := approvalStore(cfg, opts)
	if err != nil {
		return nil, err
	}
	audit, unrecorded, err := auditsink.Open(cfg, opts.Audit, opts.AuditDatabase, opts.AuditAlso, logger, &owned)
	if err != nil {
		return nil, err
	}
	life, cancel := context.WithCancel(context.Background())
	h := &Host{cfg: cfg, logger: logger, redactor: redactor, binder: binder,
		policy: policy, approver: opts.Approver, audit: audit, unrecorded: unrecorded, store: store,
		model: opts.Model, modelName: cmp.Or(opts.ModelName, cfg.LLM.Model), systemPrompt: cmp.Or(opts.SystemPrompt, cfg.LLM.SystemPrompt),
		obs: opts.Observer, durable: opts.Durability, auth: opts.Authorizer, life: life, cancel: cancel,
		maxModelResult: orDefault(cfg.Limits.MaxModelResultBytes, config.DefaultMaxModelResultBytes), hooks: hookRunner, pins: pinState}
	h.taint = taint.New(h.redactor, pinState, h.logger)
	h.record = auditsink.Redacting{Sink: audit, Redactor: redactor}
	h.secureSrc = &secureargs.Source{Binder: binder, Logger: logger, Snapshot: h.Server}
	h.owned, owned = owned, nil // Close closes them from here on
	h.connections(opts)
	h.pipeline = newPipeline(h) // after obs and durable are set
	if h.durable != nil {
		if err := h.durable.Start(h.runDurableTurn); err != nil {
			_ = h.Close()
			return nil, fmt.Errorf("host: durability: %w", err)
		}
	}
	return h, nil
}

// checkOptions checks what New is given: a config whose servers the
// managed policy admits, transports and sources of configured names, and
// every configured plugin among the sources.
func checkOptions(opts Options) error {
	cfg := opts.Config
	if cfg == nil {
		return fmt.Errorf("host: no config")
	}
	// The administrator's managed policy decides which servers may be
	// used at all, however the config was built.
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		if sc := cfg.MCPServers[name]; sc != nil && !sc.Disabled {
			if err := cfg.AdmitServer(name); err != nil {
				return hosterr.Config(err)
			}
		}
	}
	for name := range opts.Transports {
		if _, ok := cfg.MCPServers[name]; !ok {
			return fmt.Errorf("host: a transport is given for %q, which is not a configured server", name)
		}
	}
	if err := cfg.CheckSources(slices.Collect(maps.Keys(opts.Sources))...); err != nil {
		return hosterr.Config(err)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Sources)) {
		if _, ok := opts.Sources[name]; !ok && cfg.Sources[name] != nil {
			return hosterr.Config(fmt.Errorf("sources.%s: a credential plugin, which host.New does not start: build the host with compose.New, or pass the source in host.Options.Sources", name))
		}
	}
	return nil
}

// redactingLogger wraps base (nil: discard) so that every value the
// redactor holds is masked.
func redactingLogger(base *slog.Logger, redactor *bindings.Redactor) *slog.Logger {
	if base == nil {
		base = slog.New(slog.DiscardHandler)
	}
	return slog.New(bindings.NewRedactingHandler(base.Handler(), redactor))
}

// newBinder builds the binder of the config's bindings over the sources.
func newBinder(cfg *config.Config, opts Options, logger *slog.Logger, redactor *bindings.Redactor) (*bindings.Binder, error) {
	binderOpts := []bindings.Option{bindings.WithRedactor(redactor), bindings.WithLogger(logger)}
	if opts.Observer != nil {
		binderOpts = append(binderOpts, bindings.WithResolveObserver(opts.Observer.CredentialResolved))
	}
	binder, err := bindings.NewBinder(cfg.Bindings, opts.Sources, binderOpts...)
	if err != nil {
		return nil, fmt.Errorf("host: bindings: %w", err)
	}
	return binder, nil
}

// newPolicy is the approvals policy of the config and of the
// administrator's managed policy.
func newPolicy(cfg *config.Config) (*rules.Policy, error) {
	var managed *rules.Managed
	if cfg.Managed != nil {
		managed = &cfg.Managed.Approvals
	}
	policy, err := rules.NewManagedPolicy(cfg.Approvals, managed)
	if err != nil {
		return nil, fmt.Errorf("host: approvals: %w", err)
	}
	return policy, nil
}

// connections makes (without connecting) the connection of every
// configured server.
func (h *Host) connections(opts Options) {
	cfg := h.cfg
	lifecycle, _ := opts.Observer.(LifecycleObserver)
	h.conns = make(map[string]*mcpconn.Conn, len(cfg.MCPServers))
	for name, sc := range cfg.MCPServers {
		var admit func(string) (string, error)
		if cfg.HasServerAllowlist() {
			admit = func(path string) (string, error) { return cfg.AdmitExecutable(name, path) }
		}
		var authorize func(http.RoundTripper) http.RoundTripper
		if h.auth != nil {
			authorize = h.auth.Transport(name)
		}
		h.conns[name] = mcpconn.New(h.life, name, mcpconn.Options{
			Config:        sc,
			DeclareSecure: cfg.BindsServer(name),
			Logger:        h.logger,
			ClientInfo:    mcp.Implementation{Name: "agenthost", Version: Version},
			Elicitation:   elicitationAdapter{server: name, fn: opts.Elicitation},
			Transport:     mcpconn.TransportFactory(opts.Transports[name]),
			Supervisor:    opts.ChildSupervisor,
			Sandbox:       cfg.ServerSandbox(name),
			Admit:         admit,
			Limits:        cfg.Limits,

			HTTPRoundTripper: authorize,
			AdmitURL:         cfg.URLAdmitter(name),
			OnReconnect:      reconnectHook(lifecycle, name),
		})
		h.names = append(h.names, name)
	}
	slices.Sort(h.names)
}

// orDefault is v, or def when v is not set.
func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// Binding says where a secure parameter's value comes from for a tool (never
// the value itself).
func (h *Host) Binding(server, tool, param string) (bindings.Spec, bool) {
	return h.binder.Lookup(server, tool, param)
}

// Logger is the host's redacting logger.
func (h *Host) Logger() *slog.Logger { return h.logger }

// Redactor is the host's redactor.
func (h *Host) Redactor() *bindings.Redactor { return h.redactor }

// Config is the configuration the host was built from.
func (h *Host) Config() *config.Config { return h.cfg }

// Connect connects every enabled server in parallel; each attempt is bounded
// by the server's connectTimeout, and one broken server never blocks the
// others. Failures are recorded in the server snapshots, not returned.
func (h *Host) Connect(ctx context.Context) {
	var wg sync.WaitGroup
	for _, name := range h.names {
		c := h.conns[name]
		if c.Disabled() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Connect(ctx); err != nil {
				h.logger.Warn("server unavailable", "server", name, "err", err)
			}
		}()
	}
	wg.Wait()
}

// connectPending connects the servers that were never tried, in parallel,
// so a turn or view on a fresh host sees their tools. Servers that failed
// and whose backoff has passed are retried in the background (their
// connection's refresh loop), so a server that is down never holds up a
// turn; one that comes back reappears in the next view.
func (h *Host) connectPending(ctx context.Context) {
	var pending []*mcpconn.Conn
	for _, name := range h.names {
		c := h.conns[name]
		switch {
		case c.Disabled():
		case c.Snapshot().Status == StatusConnecting:
			pending = append(pending, c)
		case c.RetryDue():
			c.RequestRefresh()
		}
	}
	var wg sync.WaitGroup
	for _, c := range pending {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Connect(ctx)
		}()
	}
	wg.Wait()
}

// Servers returns every configured server's snapshot, sorted by name.
func (h *Host) Servers() []*ServerSnapshot {
	out := make([]*ServerSnapshot, 0, len(h.names))
	for _, name := range h.names {
		out = append(out, h.conns[name].Snapshot())
	}
	return out
}

// Server returns one server's snapshot, or nil when it is not configured.
func (h *Host) Server(name string) *ServerSnapshot {
	c, ok := h.conns[name]
	if !ok {
		return nil
	}
	return c.Snapshot()
}

// Refresh re-lists one server's tools now.
func (h *Host) Refresh(ctx context.Context, server string) error {
	c, ok := h.conns[server]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	return c.Refresh(ctx)
}

// Close disconnects every server and stops every goroutine the host owns.
func (h *Host) Close() error {
	h.closeOnce.Do(func() {
		h.cancel()
		var wg sync.WaitGroup
		for _, c := range h.conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.Close()
			}()
		}
		wg.Wait()
		_ = h.owned.Close()
	})
	return nil
}

// elicitationAdapter routes mcp-go elicitation to the host's callback,
// declining when there is none (non-interactive runs).
type elicitationAdapter struct {
	server string
	fn     ElicitationFunc
}

var _ client.ElicitationHandler = elicitationAdapter{}

func (e elicitationAdapter) Elicit(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	if e.fn == nil {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	return e.fn(ctx, e.server, req)
}

// WarnUnrecorded logs, when audit.path and audit.store are both empty, the
// warning that tool-call decisions are not recorded, unless it was logged
// already: a host logs it once, at the first decision or here, whichever
// comes first. A program that draws on the terminal calls it before it
// draws, so that the warning is not written into its output.
func (h *Host) WarnUnrecorded() {
	if h.unrecorded != nil {
		h.unrecorded.Warn()
	}
}
