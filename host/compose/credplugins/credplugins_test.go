package credplugins

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/plugins"
)

// Start makes a plugins.Source of each configured plugin, closed with the
// host, and none for a source the program passed in; through compose.New
// too.
func TestStart(t *testing.T) {
	plugin := filepath.Join(t.TempDir(), "vault")
	script := []byte("#!/bin/sh\nexit 1\n") // a plugin that fails to start: left to the calls
	if err := os.WriteFile(plugin, script, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(script)
	cfg := &config.Config{Sources: map[string]*config.Source{"vault": {Plugin: plugin, SHA256: hex.EncodeToString(sum[:])}}}
	cfg.ApplyDefaults()
	all, owned, err := Start(cfg, nil, compose.PluginOptions{Redactor: bindings.NewRedactor()})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := all["vault"].(*plugins.Source); !ok || len(owned) != 1 {
		t.Errorf("sources.vault: source %#v, owned %d; want the plugin, to close", all["vault"], len(owned))
	}
	for _, c := range owned {
		_ = c.Close()
	}
	var given bindings.Source = bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) { return bindings.Resolved{}, nil })
	all, owned, err = Start(cfg, map[string]bindings.Source{"vault": given}, compose.PluginOptions{})
	if _, started := all["vault"].(*plugins.Source); err != nil || started || all["vault"] == nil || len(owned) != 0 {
		t.Errorf("a plugin was started for a source passed in (err %v)", err)
	}
	cfg.Sources["vault"].SHA256 = "nothex"
	if _, _, err := Start(cfg, nil, compose.PluginOptions{}); host.KindOf(err) != host.KindConfig {
		t.Errorf("a bad sha256: %v, want a config error", err)
	}
}
