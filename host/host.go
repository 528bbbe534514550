package host

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/internal/glob"
	"github.com/agenthost/agenthost/llmview"
	"github.com/agenthost/agenthost/plugins"
)

// Version is agenthost's version, reported to servers as clientInfo.
var Version = "0.1.0"

// Options configure a Host. Only Config is required.
type Options struct {
	Config *config.Config
	// Logger receives operator logs. It is wrapped so that every registered
	// secure value is redacted. Nil discards logs.
	Logger *slog.Logger
	// Sources are credential sources beyond the built-ins, by the name
	// bindings use in `source:` (plugins, or a backend's own Go code).
	Sources map[string]bindings.Source
	// Redactor receives every secret/internal value resolved; nil makes a
	// new one. Share one Redactor with anything else that prints.
	Redactor *bindings.Redactor
	// Elicitation answers servers' elicitation requests (including
	// input_required rounds). Nil declines them.
	Elicitation ElicitationFunc
	// Model is the agent loop's model; nil builds the default go-openai
	// client from the config's llm section (when it names a model).
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
	// warning). The host closes a sink it opened, not one passed here.
	Audit approvals.Sink
	// AuditAlso, when set, receives every audit record too, after Audit
	// (or the config's audit.path); a failure stops the call like Audit's.
	// The host never closes it. agenthost serve indexes records with it.
	AuditAlso approvals.Sink
	// ApprovalStore keeps approval requests and session grants where every
	// replica sees them (`--approve wait`, `agenthost approvals`); nil
	// opens the config's approvals.store when set. The host closes a
	// store it opened, not one passed here.
	ApprovalStore approvals.Store
	// Databases opens approvals.store and audit.store when the config
	// names them; approvals/stores.Databases{} opens SQLite and
	// PostgreSQL. nil links no driver, and a config naming a store is then
	// a configuration error.
	Databases Databases
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
	// OAuth configures the MCP authorization flow of servers reached by
	// url (see OAuthOptions).
	OAuth OAuthOptions
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
	args     argSchemas

	plugins  []*plugins.Source
	policy   *approvals.Policy
	approver approvals.Approver
	audit    approvals.Sink
	// unrecorded is audit when it records nothing (audit.path and
	// audit.store empty), else nil.
	unrecorded *unrecordedSink
	ownsAudit  bool
	store      approvals.Store
	ownsStore  bool

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
	// oauth holds the authorization client of each server that uses one.
	oauth map[string]*oauth.Client

	// maxModelResult bounds a tool result's text given to the model.
	maxModelResult int64

	// hooks runs the configured PreToolUse/PostToolUse hooks (nil: none).
	hooks *hooks.Runner
	// pins is the lock file of pinned tool definitions (pinned.go).
	pins *pinState
	// pipeline is the call pipeline's first stage (pipeline.go).
	pipeline stage

	// exposed tool names of the catalog (see syncNames)
	// verdicts are servers' session verdicts shared by sessions that see a
	// server alike (see sharedServerView)
	verdictsMu sync.Mutex
	verdicts   map[string]*serverVerdicts

	namesMu  sync.Mutex
	namer    *llmview.Namer
	namerGen map[string]uint64 // snapshot generation the namer has seen
	nameGen  map[string]uint64 // bumps when a server's tools' names change

	// taint: per server name, the *serverTaint of its tools whose
	// definitions hold a protected value (see syncTaint); read without a
	// lock, replaced under taintMu
	taintMu sync.Mutex
	taint   sync.Map

	closeOnce sync.Once
}

// New builds a Host from a validated config. It does not connect; call
// Connect (or let the first call connect lazily).
func New(opts Options) (*Host, error) {
	if opts.Config == nil {
		return nil, fmt.Errorf("host: no config")
	}
	cfg := opts.Config
	// The administrator's managed policy decides which servers may be
	// used at all, however the config was built.
	for _, name := range slices.Sorted(maps.Keys(cfg.MCPServers)) {
		if sc := cfg.MCPServers[name]; sc != nil && !sc.Disabled {
			if err := cfg.AdmitServer(name); err != nil {
				return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
			}
		}
	}
	for name := range opts.Transports {
		if _, ok := cfg.MCPServers[name]; !ok {
			return nil, fmt.Errorf("host: a transport is given for %q, which is not a configured server", name)
		}
	}
	redactor := opts.Redactor
	if redactor == nil {
		redactor = bindings.NewRedactor()
	}
	base := opts.Logger
	if base == nil {
		base = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	logger := slog.New(bindings.NewRedactingHandler(base.Handler(), redactor))

	if err := cfg.CheckSources(slices.Collect(maps.Keys(opts.Sources))...); err != nil {
		return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
	}
	oauthClients, err := newOAuthClients(cfg, opts.OAuth)
	if err != nil {
		return nil, err
	}
	lifecycle, _ := opts.Observer.(LifecycleObserver)
	sources, plugins, err := pluginSources(cfg, opts.Sources, logger, redactor, opts.ChildSupervisor, lifecycle)
	if err != nil {
		return nil, err
	}
	binderOpts := []bindings.Option{bindings.WithRedactor(redactor), bindings.WithLogger(logger)}
	if opts.Observer != nil {
		binderOpts = append(binderOpts, bindings.WithResolveObserver(opts.Observer.CredentialResolved))
	}
	binder, err := bindings.NewBinder(cfg.Bindings, sources, binderOpts...)
	if err != nil {
		closeAll(plugins)
		return nil, fmt.Errorf("host: bindings: %w", err)
	}

	var managed *approvals.Managed
	if cfg.Managed != nil {
		managed = &cfg.Managed.Approvals
	}
	policy, err := approvals.NewManagedPolicy(cfg.Approvals, managed)
	if err != nil {
		_ = binder.Close()
		closeAll(plugins)
		return nil, fmt.Errorf("host: approvals: %w", err)
	}
	hookRunner, err := newHookRunner(cfg.Hooks, cfg.File, opts.ChildSupervisor)
	if err != nil {
		_ = binder.Close()
		closeAll(plugins)
		return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
	}
	pinState, err := newPinState(cfg)
	if err != nil {
		_ = binder.Close()
		closeAll(plugins)
		return nil, &Error{Kind: KindConfig, Message: err.Error(), Err: err}
	}
	audit, ownsAudit := opts.Audit, false
	if audit == nil {
		audit, err = approvals.OpenSinkWith(cfg.Audit.Path, approvals.FileSinkOptions{OnGap: func(g approvals.Gap) {
			logger.Warn("the audit file was "+g.Reason+" while in use; reopened it and recorded the gap",
				"path", g.Path, "since", g.Since, "records", g.Records)
		}})
		if err != nil {
			_ = binder.Close()
			closeAll(plugins)
			return nil, &Error{Kind: KindConfig, Message: fmt.Sprintf("audit.path: %v", err), Err: err}
		}
		if cfg.Audit.Path == "" {
			// Said when it matters: at the first decision, so commands
			// that never call a tool do not warn.
			audit = &unrecordedSink{Sink: audit, logger: logger}
		}
		ownsAudit = true
	}
	store, ownsStore, audit, err := attachStores(cfg, opts.Databases, opts.ApprovalStore, audit, ownsAudit)
	if err != nil {
		if ownsAudit {
			_ = audit.Close()
		}
		_ = binder.Close()
		closeAll(plugins)
		return nil, err
	}

	unrecorded, _ := audit.(*unrecordedSink)
	if opts.AuditAlso != nil {
		audit = alsoSink{Sink: audit, also: opts.AuditAlso}
	}

	life, cancel := context.WithCancel(context.Background())
	h := &Host{
		plugins:        plugins,
		policy:         policy,
		approver:       opts.Approver,
		audit:          audit,
		unrecorded:     unrecorded,
		ownsAudit:      ownsAudit,
		store:          store,
		ownsStore:      ownsStore,
		cfg:            cfg,
		logger:         logger,
		redactor:       redactor,
		binder:         binder,
		life:           life,
		cancel:         cancel,
		conns:          map[string]*mcpconn.Conn{},
		oauth:          oauthClients,
		maxModelResult: orDefault(cfg.Limits.MaxModelResultBytes, config.DefaultMaxModelResultBytes),
		hooks:          hookRunner,
		pins:           pinState,

		model:        opts.Model,
		modelName:    opts.ModelName,
		systemPrompt: opts.SystemPrompt,
		obs:          opts.Observer,
		durable:      opts.Durability,
	}
	if h.modelName == "" {
		h.modelName = cfg.LLM.Model
	}
	if h.systemPrompt == "" {
		h.systemPrompt = cfg.LLM.SystemPrompt
	}
	if h.model == nil && cfg.LLM.Model != "" {
		mo := openaimodel.Options{BaseURL: cfg.LLM.BaseURL, APIKey: cfg.LLM.APIKey, Timeout: cfg.LLM.Timeout}
		if obs := opts.Observer; obs != nil {
			mo.Propagate = func(ctx context.Context, header http.Header) {
				if tp, ts := obs.TraceContext(ctx); tp != "" {
					header.Set("traceparent", tp)
					if ts != "" {
						header.Set("tracestate", ts)
					}
				}
			}
		}
		h.model = openaimodel.New(mo)
	}
	for name, sc := range cfg.MCPServers {
		name := name
		var admit func(string) (string, error)
		if cfg.HasServerAllowlist() {
			admit = func(path string) (string, error) { return cfg.AdmitExecutable(name, path) }
		}
		c := mcpconn.New(life, name, mcpconn.Options{
			Config:        sc,
			DeclareSecure: h.hasBindings(name),
			Logger:        logger,
			ClientInfo:    mcp.Implementation{Name: "agenthost", Version: Version},
			Elicitation:   elicitationAdapter{server: name, fn: opts.Elicitation},
			Transport:     mcpconn.TransportFactory(opts.Transports[name]),
			Supervisor:    opts.ChildSupervisor,
			Sandbox:       cfg.ServerSandbox(name),
			Admit:         admit,
			Limits:        cfg.Limits,

			HTTPRoundTripper: oauthRoundTripper(name, oauthClients[name], opts.OAuth),
			AdmitURL:         admitURL(cfg, name),
			OnReconnect:      reconnectHook(lifecycle, name),
		})
		h.conns[name] = c
		h.names = append(h.names, name)
	}
	slices.Sort(h.names)
	h.pipeline = newPipeline(h)
	if h.durable != nil {
		if err := h.durable.Start(h.runDurableTurn); err != nil {
			_ = h.Close()
			return nil, fmt.Errorf("host: durability: %w", err)
		}
	}
	return h, nil
}

// admitURL is the managed policy's check of a server's redirect targets;
// nil without a managed policy.
func admitURL(cfg *config.Config, name string) func(*url.URL) error {
	if cfg.Managed == nil {
		return nil
	}
	return func(u *url.URL) error { return cfg.AdmitURL(name, u) }
}

// orDefault is v, or def when v is not set.
func orDefault(v, def int64) int64 {
	if v <= 0 {
		return def
	}
	return v
}

// hasBindings reports whether any binding targets the server: only then is
// the secure-params extension declared to it.
func (h *Host) hasBindings(server string) bool {
	for _, b := range h.cfg.Bindings {
		if b.Server == server {
			return true
		}
		if glob.Match(b.Server, server) {
			return true
		}
	}
	return false
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
		_ = h.binder.Close()
		closeAll(h.plugins)
		if h.ownsAudit {
			if err := h.audit.Close(); err != nil {
				h.logger.Error("closing the audit log failed", "err", err)
			}
		}
		if h.ownsStore {
			_ = h.store.Close()
		}
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

// unrecordedSink stands for an empty audit.path: records are discarded, and
// the first one warns once that decisions are not recorded.
type unrecordedSink struct {
	approvals.Sink
	logger *slog.Logger
	once   sync.Once
}

func (u *unrecordedSink) Write(ctx context.Context, r *approvals.Record) error {
	u.warn()
	return u.Sink.Write(ctx, r)
}

func (u *unrecordedSink) warn() {
	u.once.Do(func() {
		u.logger.Warn("audit.path is empty: tool-call decisions are not recorded (set audit.path; see docs/config.md)")
	})
}

// WarnUnrecorded logs, when audit.path and audit.store are both empty, the
// warning that tool-call decisions are not recorded, unless it was logged
// already: a host logs it once, at the first decision or here, whichever
// comes first. A program that draws on the terminal calls it before it
// draws, so that the warning is not written into its output.
func (h *Host) WarnUnrecorded() {
	if h.unrecorded != nil {
		h.unrecorded.warn()
	}
}

// alsoSink writes each record to Sink, then to also; Close closes Sink only.
type alsoSink struct {
	approvals.Sink
	also approvals.Sink
}

func (a alsoSink) Write(ctx context.Context, r *approvals.Record) error {
	if err := a.Sink.Write(ctx, r); err != nil {
		return err
	}
	return a.also.Write(ctx, r)
}

// Err reports the first sink's sticky failure, as an unwrapped sink would.
func (a alsoSink) Err() error {
	if fr, ok := a.Sink.(approvals.FailureReporter); ok {
		return fr.Err()
	}
	return nil
}
