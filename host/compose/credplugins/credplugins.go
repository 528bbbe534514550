// Package credplugins starts the credential plugins of a config's sources
// section for host/compose (compose.Options.Plugins): each is a
// plugins.Source, started lazily and configured at once. It is its own
// package so that a program that starts no plugin links neither it nor
// go-plugin and gRPC beneath it.
package credplugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/plugins"
)

// Start starts (lazily: a plugin process starts on its first Resolve) a
// credential source for every configured plugin that the embedding
// application did not supply itself (given), and returns all sources by
// name with the plugins to close with the host, also when it fails. It is
// a compose.Plugins.
func Start(cfg *config.Config, given map[string]bindings.Source, o compose.PluginOptions) (_ map[string]bindings.Source, owned []io.Closer, _ error) {
	logger, redactor, supervisor, lifecycle := o.Logger, o.Redactor, o.Supervisor, o.Lifecycle
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	all := make(map[string]bindings.Source, len(given)+len(cfg.Sources))
	for name, src := range given {
		all[name] = src
	}
	names := make([]string, 0, len(cfg.Sources))
	for name := range cfg.Sources {
		names = append(names, name)
	}
	sort.Strings(names)
	var started []*plugins.Source
	defer func() {
		for _, src := range started {
			owned = append(owned, src)
		}
	}()
	for _, name := range names {
		sc := cfg.Sources[name]
		if _, ok := all[name]; ok || sc == nil {
			continue
		}
		sum, err := plugins.ParseChecksum(sc.SHA256)
		if err != nil {
			return nil, owned, &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("sources.%s.sha256: %v", name, err), Err: err}
		}
		// A sandboxed plugin without a supervisor (or on a kernel that
		// cannot apply it) fails to start: it never runs unsandboxed.
		sandbox, err := cfg.SourceSandbox(name).Child("")
		if err != nil {
			return nil, owned, &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("sources.%s.sandbox: %v", name, err), Err: err}
		}
		src, err := plugins.NewSource(plugins.Options{
			Name:         name,
			Path:         sc.Plugin,
			Env:          childproc.Env(os.Getenv, nil),
			Checksum:     sum,
			Config:       sc.Config,
			Logger:       hclogFor(logger.With("source", name)),
			Redactor:     redactor,
			StartTimeout: sc.StartTimeout,
			CallTimeout:  sc.CallTimeout,
			Supervisor:   supervisor,
			Sandbox:      sandbox,
			OnRestart:    restartHook(lifecycle, name),
		})
		if err != nil {
			return nil, owned, &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("sources.%s: %v", name, err), Err: err}
		}
		started = append(started, src)
		all[name] = src
	}
	if err := configurePlugins(started); err != nil {
		return nil, owned, err
	}
	return all, owned, nil
}

// configurePlugins starts every plugin (each start sends it its config,
// which it validates against its own schema and checks in Configure), so
// that a config it rejects fails compose.New as a configuration error naming
// sources.NAME.config and the plugin's reason, on one line and without its
// stderr, rather than the first call that needs a value. A plugin that
// fails to start for another reason (it crashed, timed out) is left to the
// calls, which report it and start it again as before.
func configurePlugins(started []*plugins.Source) error {
	for _, src := range started {
		_, err := src.Describe(context.Background())
		var se *plugins.StartError
		if errors.As(err, &se) && errors.Is(se.Reason, plugins.ErrConfigure) {
			return &host.Error{Kind: host.KindConfig, Message: fmt.Sprintf("sources.%s.config: the plugin rejects it: %s", src.Name(), se.Detail), Err: err}
		}
	}
	return nil
}

// hclogFor routes a plugin's log lines into the host's (redacting) logger.
func hclogFor(logger *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "plugin",
		Level:      hclog.Debug,
		Output:     mcpconn.NewLineLogger(logger, "plugin"),
		JSONFormat: false,
	})
}

// restartHook tells the observer about a plugin's restarts (nil without
// one).
func restartHook(o host.LifecycleObserver, source string) func() {
	if o == nil {
		return nil
	}
	return func() { o.PluginRestarted(context.Background(), source) }
}
