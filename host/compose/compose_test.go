package compose

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/model/openaimodel"
	"github.com/agenthost/agenthost/host/oauth"
	"github.com/agenthost/agenthost/host/observe"
)

// counts are the Close calls of what fakeDatabases opened.
type counts struct{ store, sink int }

// fakeDatabases opens stores that count their Close calls; openErr and
// sinkErr make Open and OpenAuditSink fail.
type fakeDatabases struct {
	n                *counts
	openErr, sinkErr error
}

type countingStore struct {
	approvals.Store
	n *int
}

func (s countingStore) Close() error { *s.n++; return nil }

type countingSink struct {
	auditlog.Discard
	n *int
}

func (s countingSink) Close() error { *s.n++; return nil }

func (d fakeDatabases) Open(context.Context, string) (approvals.Store, error) {
	if d.openErr != nil {
		return nil, d.openErr
	}
	return countingStore{n: &d.n.store}, nil
}

func (d fakeDatabases) OpenAuditSink(context.Context, string) (auditlog.Sink, error) {
	if d.sinkErr != nil {
		return nil, d.sinkErr
	}
	return countingSink{n: &d.n.sink}, nil
}

func (fakeDatabases) VerifyAudit(context.Context, string) ([]auditlog.ChainReport, error) {
	return nil, nil
}

func (fakeDatabases) Describe(string) string { return "fake" }

func allowAll() rules.Config {
	return rules.Config{Rules: []rules.Rule{{ID: "all", When: rules.Match{}, Decide: "allow"}}}
}

// shaped is a config that allows every call, in the shape given.
func shaped(shape func(*config.Config)) *config.Config {
	cfg := &config.Config{Approvals: allowAll()}
	shape(cfg)
	cfg.ApplyDefaults()
	return cfg
}

// Each config shape builds what it names, and only that; a part the
// program passes itself is kept.
func TestBuildFromConfig(t *testing.T) {
	var given model.LLM = &fakeModel{}
	plugin := filepath.Join(t.TempDir(), "vault")
	script := []byte("#!/bin/sh\nexit 1\n") // a plugin that fails to start: left to the calls
	if err := os.WriteFile(plugin, script, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	vault := map[string]*config.Source{"vault": {Plugin: plugin, SHA256: hex.EncodeToString(sum[:])}}
	var givenSource bindings.Source = bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) { return bindings.Resolved{}, nil })
	tests := []struct {
		name  string
		cfg   func(*config.Config)
		opts  Options
		check func(t *testing.T, ho host.Options, n *counts)
	}{
		{"empty", func(*config.Config) {}, Options{}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.Model != nil || ho.ApprovalStore != nil || ho.AuditDatabase != nil || ho.Authorizer != nil || ho.Observer != nil || len(ho.Owned) != 0 {
				t.Errorf("an empty config built %+v", ho)
			}
		}},
		{"llm", func(c *config.Config) { c.LLM = config.LLM{Model: "m", BaseURL: "http://127.0.0.1:1/v1"} }, Options{}, func(t *testing.T, ho host.Options, n *counts) {
			if m, ok := ho.Model.(*openaimodel.Model); !ok || m.BaseURL() != "http://127.0.0.1:1/v1" {
				t.Errorf("llm.model: model %#v, want the go-openai client of llm.baseURL", ho.Model)
			}
		}},
		{"given model", func(c *config.Config) { c.LLM = config.LLM{Model: "m"} }, Options{Host: host.Options{Model: given}}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.Model != given {
				t.Errorf("the model passed in was replaced by %#v", ho.Model)
			}
		}},
		{"stores", func(c *config.Config) { c.Approvals.Store, c.Audit.Store = "sqlite:a", "sqlite:b" }, Options{}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.ApprovalStore == nil || ho.AuditDatabase == nil || len(ho.Owned) != 2 {
				t.Errorf("approvals.store and audit.store: store %v, audit %v, owned %d", ho.ApprovalStore, ho.AuditDatabase, len(ho.Owned))
			}
		}},
		{"given audit", func(c *config.Config) { c.Audit.Store = "sqlite:b" }, Options{Host: host.Options{Audit: auditlog.Discard{}}}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.AuditDatabase != nil || len(ho.Owned) != 0 {
				t.Error("audit.store was opened beside an audit sink passed in")
			}
		}},
		{"oauth", func(c *config.Config) {
			c.MCPServers = map[string]*config.Server{"remote": {URL: "http://127.0.0.1:1/mcp"}, "local": {Command: "x"},
				"static": {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}}
		}, Options{}, func(t *testing.T, ho host.Options, n *counts) {
			a, ok := ho.Authorizer.(*authorizer)
			if !ok || len(a.clients) != 1 || a.clients["remote"] == nil {
				t.Fatalf("authorizer %#v: want one client, of the server reached by url", ho.Authorizer)
			}
			if a.Transport("local") != nil || a.Transport("remote") == nil {
				t.Error("the transport of a server without OAuth is wrapped, or the one with it is not")
			}
		}},
		{"oauth disabled", func(c *config.Config) {
			c.MCPServers = map[string]*config.Server{"remote": {URL: "http://127.0.0.1:1/mcp"}}
		}, Options{OAuth: OAuthOptions{Disabled: true}}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.Authorizer != nil {
				t.Error("OAuth.Disabled built an authorizer")
			}
		}},
		{"plugin", func(c *config.Config) { c.Sources = vault }, Options{Plugins: fakePlugins}, func(t *testing.T, ho host.Options, n *counts) {
			if _, ok := ho.Sources["vault"].(*fakeSource); !ok || len(ho.Owned) != 1 {
				t.Errorf("sources.vault: source %#v, owned %d; want the plugin Options.Plugins started, closed with the host", ho.Sources["vault"], len(ho.Owned))
			}
		}},
		{"given source for a plugin", func(c *config.Config) { c.Sources = vault },
			Options{Host: host.Options{Sources: map[string]bindings.Source{"vault": givenSource}}}, func(t *testing.T, ho host.Options, n *counts) {
				if _, started := ho.Sources["vault"].(*fakeSource); started || ho.Sources["vault"] == nil || len(ho.Owned) != 0 {
					t.Error("a plugin was started for a source passed in")
				}
			}},
		{"telemetry", func(c *config.Config) {
			c.Observability = config.Observability{Enabled: true, Endpoint: "http://127.0.0.1:1"}
		}, Options{Telemetry: fakeTelemetry}, func(t *testing.T, ho host.Options, n *counts) {
			if _, ok := ho.Observer.(fakeObserver); !ok || len(ho.Owned) != 1 {
				t.Errorf("observability.enabled: observer %v, owned %d; want Options.Telemetry's and its flush", ho.Observer, len(ho.Owned))
			}
		}},
		{"telemetry off", func(c *config.Config) {}, Options{Telemetry: fakeTelemetry}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.Observer != nil || len(ho.Owned) != 0 {
				t.Errorf("telemetry set up with observability off: observer %v, owned %d", ho.Observer, len(ho.Owned))
			}
		}},
		{"telemetry not asked for", func(c *config.Config) {
			c.Observability = config.Observability{Enabled: true, Endpoint: "http://127.0.0.1:1"}
		}, Options{}, func(t *testing.T, ho host.Options, n *counts) {
			if ho.Observer != nil {
				t.Error("telemetry set up without Options.Telemetry")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, n := shaped(tt.cfg), &counts{}
			opts := tt.opts
			opts.Databases = fakeDatabases{n: n}
			ho, err := build(context.Background(), cfg, opts)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, ho, n)
			for _, c := range ho.Owned {
				_ = c.Close()
			}
		})
	}
}

// A step that fails closes what the steps before it opened, once; a host
// that is built closes it at its Close, once.
func TestNewClosesWhatItOpened(t *testing.T) {
	boom := errors.New("boom")
	withStores := func(c *config.Config) { c.Approvals.Store, c.Audit.Store = "sqlite:a", "sqlite:b" }
	tests := []struct {
		name   string
		cfg    func(*config.Config)
		db     func(*counts) Databases
		host   host.Options
		want   counts // Close calls after New (and Close when it succeeds)
		failed bool
	}{
		{"approvals store fails", withStores, func(n *counts) Databases { return fakeDatabases{n: n, openErr: boom} }, host.Options{}, counts{}, true},
		{"audit database fails", withStores, func(n *counts) Databases { return fakeDatabases{n: n, sinkErr: boom} }, host.Options{}, counts{store: 1}, true},
		{"no databases for audit.store", func(c *config.Config) { c.Audit.Store = "sqlite:b" }, func(*counts) Databases { return nil }, host.Options{}, counts{}, true},
		{"bad oauth key, before the stores", func(c *config.Config) {
			withStores(c)
			c.MCPServers = map[string]*config.Server{"remote": {URL: "http://127.0.0.1:1/mcp", OAuth: &config.OAuth{PrivateKey: "not a key"}}}
		}, func(n *counts) Databases { return fakeDatabases{n: n} }, host.Options{}, counts{}, true},
		{"bad plugin checksum, before the stores", func(c *config.Config) {
			withStores(c)
			c.Sources = map[string]*config.Source{"vault": {Plugin: "/srv/plugins/none", SHA256: "xyz"}}
		}, func(n *counts) Databases { return fakeDatabases{n: n} }, host.Options{}, counts{}, true},
		{"host.New fails", withStores, func(n *counts) Databases { return fakeDatabases{n: n} },
			host.Options{Transports: map[string]host.TransportFactory{"nobody": nil}}, counts{store: 1, sink: 1}, true},
		{"built, then closed", withStores, func(n *counts) Databases { return fakeDatabases{n: n} }, host.Options{}, counts{store: 1, sink: 1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, n := shaped(tt.cfg), &counts{}
			h, err := New(context.Background(), cfg, Options{Host: tt.host, Databases: tt.db(n)})
			if (err != nil) != tt.failed {
				t.Fatalf("New: %v, want failure %v", err, tt.failed)
			}
			if err == nil {
				if *n != (counts{}) {
					t.Fatalf("a built host's stores were closed: %+v", *n)
				}
				_ = h.Close()
				_ = h.Close()
			}
			if *n != tt.want {
				t.Errorf("Close calls %+v, want %+v (err %v)", *n, tt.want, err)
			}
		})
	}
}

// A host built with approvals.store and audit.store on real databases
// keeps approvals there and closes both at its Close; VerifyAudit and
// OpenApprovalStore report what is not configured as config errors.
func TestNewOpensConfiguredStores(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cfg := &config.Config{Approvals: allowAll(), Audit: config.Audit{Store: "sqlite:" + filepath.Join(dir, "audit.db")}}
	cfg.Approvals.Store = "sqlite:" + filepath.Join(dir, "approvals.db")
	cfg.ApplyDefaults()
	h, err := New(ctx, cfg, Options{Databases: stores.Databases{}})
	if err != nil {
		t.Fatal(err)
	}
	store := h.ApprovalStore()
	if store == nil {
		t.Fatal("no approval store opened")
	}
	_ = h.Close()
	if _, err := store.List(ctx, approvals.ListOptions{}); !errors.Is(err, approvals.ErrStoreClosed) {
		t.Errorf("the host did not close the store compose opened: %v", err)
	}
	if reports, err := VerifyAudit(ctx, cfg, stores.Databases{}); err != nil || len(reports) != 0 {
		t.Errorf("VerifyAudit of an empty audit store: %+v, %v", reports, err)
	}
	empty := &config.Config{File: "agenthost.yaml"}
	if _, err := OpenApprovalStore(ctx, empty, stores.Databases{}); host.KindOf(err) != host.KindConfig || !strings.Contains(err.Error(), "approvals.store is not set") {
		t.Errorf("OpenApprovalStore without approvals.store: %v", err)
	}
	if _, err := VerifyAudit(ctx, empty, stores.Databases{}); host.KindOf(err) != host.KindConfig || !strings.Contains(err.Error(), "audit.store is not set") {
		t.Errorf("VerifyAudit without audit.store: %v", err)
	}
	key := &config.Config{Audit: config.Audit{Store: "sqlite:" + filepath.Join(dir, "keyed.db")}}
	sink, err := stores.Databases{ChainKey: []byte("0123456789abcdef0123456789abcdef")}.OpenAuditSink(ctx, key.Audit.Store)
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Write(ctx, &auditlog.Record{SessionID: "s", CallID: "c"}); err != nil {
		t.Fatal(err)
	}
	_ = sink.Close()
	if _, err := VerifyAudit(ctx, key, stores.Databases{}); host.KindOf(err) != host.KindConfig || !errors.Is(err, auditlog.ErrChainKeyRequired) {
		t.Errorf("VerifyAudit of keyed records without the key: %v, want a config error (ErrChainKeyRequired)", err)
	}
}

// The authorizer's transport reports a request's failed authorization as
// *host.AuthorizationFailure (the host keeps the connection and tells the
// session), with the failure's message and where to log in; other errors
// pass as they are.
func TestAuthorizationFailures(t *testing.T) {
	other := errors.New("connection reset")
	tests := []struct {
		name          string
		err           error
		wrapped       bool
		msg, url, sub string
	}{
		{"authorization required", &oauth.AuthorizationRequiredError{Subject: "alice", AuthURL: "http://127.0.0.1:1/authorize"}, true, "", "http://127.0.0.1:1/authorize", "alice"},
		{"too many attempts", errors.Join(errors.New("backoff"), oauth.ErrTooManyAttempts), true, oauth.ErrTooManyAttempts.Error(), "", ""},
		{"authorization server error", &oauth.AuthorizationError{Code: "invalid_grant"}, true, (&oauth.AuthorizationError{Code: "invalid_grant"}).Error(), "", ""},
		{"other", other, false, "", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := failures{roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, tt.err })}
			_, err := rt.RoundTrip(httptest.NewRequest("GET", "http://127.0.0.1:1/mcp", nil))
			af, ok := errors.AsType[*host.AuthorizationFailure](err)
			if ok != tt.wrapped || !errors.Is(err, tt.err) {
				t.Fatalf("error %v: wrapped %v, want %v, and the cause kept", err, ok, tt.wrapped)
			}
			if !ok {
				return
			}
			if tt.msg == "" {
				tt.msg = tt.err.Error()
			}
			if af.Message != tt.msg || af.AuthURL != tt.url || af.Subject != tt.sub || af.Error() != tt.err.Error() {
				t.Errorf("failure %+v, want message %q, auth URL %q, subject %q", af, tt.msg, tt.url, tt.sub)
			}
		})
	}
}

// fakeModel is a model passed in (never called).
type fakeModel struct{ model.LLM }

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fakeSource is the source fakePlugins starts for every plugin.
type fakeSource struct{ bindings.SourceFunc }

var fakePluginSource = &fakeSource{func(context.Context, bindings.Request) (bindings.Resolved, error) {
	return bindings.Resolved{}, nil
}}

// fakePlugins is a compose.Plugins that starts fakePluginSource for each
// plugin given does not supply, with one closer each.
func fakePlugins(cfg *config.Config, given map[string]bindings.Source, _ PluginOptions) (map[string]bindings.Source, []io.Closer, error) {
	all := map[string]bindings.Source{}
	var owned []io.Closer
	for name := range given {
		all[name] = given[name]
	}
	for name := range cfg.Sources {
		if _, ok := all[name]; !ok {
			all[name] = fakePluginSource
			owned = append(owned, io.NopCloser(nil))
		}
	}
	return all, owned, nil
}

// fakeObserver is the observer fakeTelemetry sets up.
type fakeObserver struct{ observe.Observer }

// fakeTelemetry is a compose.Telemetry that is on by the section's rule.
func fakeTelemetry(_ context.Context, obs config.Observability, _ *slog.Logger) (host.Observer, func(context.Context) error, error) {
	if !obs.On(func(string) (string, bool) { return "", false }) {
		return nil, nil, nil
	}
	return fakeObserver{}, func(context.Context) error { return nil }, nil
}

// A config that names a plugin with no Options.Plugins (and no source
// given for it) is a configuration error naming its key, the first by
// name.
func TestPluginWithoutStarter(t *testing.T) {
	cfg := shaped(func(c *config.Config) {
		c.Sources = map[string]*config.Source{"vault": {Plugin: "/bin/false"}, "zeta": {Plugin: "/bin/false"}, "alpha": {Plugin: "/bin/false"}}
	})
	for range 20 { // the first name, whatever the map's order
		_, err := build(context.Background(), cfg, Options{})
		if host.KindOf(err) != host.KindConfig || !strings.Contains(err.Error(), "sources.alpha ") {
			t.Fatalf("build = %v; want a config error naming sources.alpha", err)
		}
	}
	_, err := build(context.Background(), cfg, Options{Host: host.Options{Sources: map[string]bindings.Source{"alpha": fakePluginSource, "vault": fakePluginSource}}})
	if err == nil || !strings.Contains(err.Error(), "sources.zeta ") {
		t.Fatalf("with alpha and vault given: %v; want the error naming sources.zeta", err)
	}
}

// UsesOf names what a config uses of Options' parts.
func TestUsesOf(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	endpoint := func(k string) (string, bool) { return "http://collector:4318", k == "OTEL_EXPORTER_OTLP_ENDPOINT" }
	for _, tc := range []struct {
		name string
		cfg  config.Config
		env  func(string) (string, bool)
		want Uses
	}{
		{"nothing", config.Config{}, none, Uses{}},
		{"telemetry by the section", config.Config{Observability: config.Observability{Enabled: true}}, none, Uses{Telemetry: true}},
		{"telemetry by the environment", config.Config{}, endpoint, Uses{Telemetry: true}},
		{"a plugin", config.Config{Sources: map[string]*config.Source{"v": {Plugin: "p"}}}, none, Uses{Plugins: true}},
		{"approvals.store", config.Config{Approvals: rules.Config{Store: "sqlite:x"}}, none, Uses{Databases: true}},
		{"audit.store", config.Config{Audit: config.Audit{Store: "sqlite:x"}}, none, Uses{Databases: true}},
		{"an expression", config.Config{Approvals: rules.Config{Rules: []rules.Rule{{ID: "r", When: rules.Match{Expr: "true"}}}}}, none, Uses{Expressions: true}},
		{"a managed expression", config.Config{Managed: &config.Managed{Approvals: rules.Managed{Rules: []rules.Rule{{ID: "managed/r", When: rules.Match{Expr: "true"}}}}}}, none, Uses{Expressions: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UsesOf(&tc.cfg, tc.env); got != tc.want {
				t.Errorf("UsesOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
