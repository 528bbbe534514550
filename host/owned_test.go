package host

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/closer"
	"github.com/agenthost/agenthost/host/model"
)

// New closes Options.Owned, once, when a step fails (the first step or a
// later one); a built host closes them once at Close, last first, after
// its own audit file.
func TestOwnedClosedOnce(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		cfg    func(*config.Config)
		opts   func(*Options)
		failed bool
	}{
		{"built", func(*config.Config) {}, func(*Options) {}, false},
		{"unknown transport", func(*config.Config) {}, func(o *Options) { o.Transports = map[string]TransportFactory{"nobody": nil} }, true},
		{"bad approvals policy", func(c *config.Config) { c.Approvals.Rules[0].Decide = "perhaps" }, func(*Options) {}, true},
		{"enforced pins with an unreadable lock", func(c *config.Config) { c.Pins = config.Pins{Enabled: true, File: dir} }, func(*Options) {}, true},
		{"approvals.store without a store", func(c *config.Config) { c.Approvals.Store = "sqlite:x" }, func(*Options) {}, true},
		{"unwritable audit.path", func(c *config.Config) { c.Audit.Path = filepath.Join(dir, "no", "such", "dir", "audit.jsonl") }, func(*Options) {}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Approvals: readsAllowed()}
			tt.cfg(cfg)
			cfg.ApplyDefaults()
			var order []string
			closed := func(name string) io.Closer {
				return closer.Func(func() error { order = append(order, name); return nil })
			}
			opts := Options{Config: cfg, Owned: []io.Closer{closed("first"), closed("second")}}
			tt.opts(&opts)
			h, err := New(opts)
			if (err != nil) != tt.failed {
				t.Fatalf("New: %v, want failure %v", err, tt.failed)
			}
			if err == nil {
				if len(order) != 0 {
					t.Fatalf("a built host closed %v", order)
				}
				_ = h.Close()
				_ = h.Close()
			}
			if strings.Join(order, ",") != "second,first" {
				t.Errorf("Owned closed as %v, want second,first, once (err %v)", order, err)
			}
		})
	}
}

// A config naming a credential plugin that nobody started is refused:
// host.New starts no plugin (compose.New does), and never resolves its
// bindings' values some other way.
func TestNewRefusesUnstartedPlugins(t *testing.T) {
	cfg := &config.Config{Approvals: readsAllowed(), Sources: map[string]*config.Source{"vault": {Plugin: "/srv/plugins/vault"}}}
	cfg.ApplyDefaults()
	_, err := New(Options{Config: cfg})
	if KindOf(err) != KindConfig || !strings.Contains(err.Error(), "sources.vault") || !strings.Contains(err.Error(), "compose.New") {
		t.Fatalf("New with an unstarted plugin: %v, want a config error naming sources.vault and compose.New", err)
	}
	vault := bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) { return bindings.Resolved{}, nil })
	h, err := New(Options{Config: cfg, Sources: map[string]bindings.Source{"vault": vault}})
	if err != nil {
		t.Fatalf("New with the plugin's source given: %v", err)
	}
	_ = h.Close()
}

// A turn runs on the model passed in Options.Model; without one the host
// builds none, even when llm.model names one (compose.New builds it): the
// turn fails with ErrNoModel, a configuration error.
func TestNewUsesTheModelItIsGiven(t *testing.T) {
	answer := model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		return model.Message{Role: model.RoleAssistant, Content: "answered by the given model"}, model.Usage{}, nil
	})
	tests := []struct {
		name      string
		model     model.LLM
		wantText  string
		wantError string
	}{
		{"given", answer, "answered by the given model", ""},
		{"none, llm.model set", nil, "", ErrNoModel.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Approvals: readsAllowed(), LLM: config.LLM{Model: "gpt-test", BaseURL: "http://127.0.0.1:1/v1"}}
			cfg.ApplyDefaults()
			h, err := New(Options{Config: cfg, Model: tt.model})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			s := h.NewSession(SessionOptions{ID: "s"})
			defer s.Close()
			var text, failed string
			for e := range s.Turn(context.Background(), "hello", TurnOptions{}) {
				switch e.Type {
				case EventAssistant:
					text = e.Text
				case EventError:
					failed = e.Error
				}
			}
			if text != tt.wantText || !strings.Contains(failed, tt.wantError) || (tt.wantError == "") != (failed == "") {
				t.Errorf("turn: text %q, error %q; want %q, %q", text, failed, tt.wantText, tt.wantError)
			}
		})
	}
}
