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
// A program that wires a host by hand calls host.New with the parts it
// chose instead, and links none of these (docs/library.md).
package compose

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/internal/closer"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/host/otelobs"
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
	// TelemetryFlushTimeout.
	Telemetry bool
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
	if ho.Sources, err = pluginSources(cfg, ho.Sources, logger, ho.Redactor, ho.ChildSupervisor, lifecycle, &owned); err != nil {
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
func setupTelemetry(ctx context.Context, cfg *config.Config, on bool, logger *slog.Logger, ho *host.Options, owned *closer.Stack) error {
	if !on || ho.Observer != nil {
		return nil
	}
	tel, err := otelobs.Setup(ctx, cfg.Observability, otelobs.SetupOptions{ServiceVersion: host.Version, Logger: logger})
	if err != nil || tel == nil {
		return err
	}
	owned.Push(closer.Func(func() error {
		ctx, cancel := context.WithTimeout(context.Background(), TelemetryFlushTimeout)
		defer cancel()
		return tel.Shutdown(ctx)
	}))
	ho.Observer = tel.Observer
	return nil
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
