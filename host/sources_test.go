package host_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// TestYAMLBindingNamesAGoSource: a YAML configuration whose binding names
// a source the program supplies in Go (Options.Sources) loads with
// config.Parse and builds a host; a source nobody supplies is refused by
// host.New as a configuration error naming the file and the key.
func TestYAMLBindingNamesAGoSource(t *testing.T) {
	doc := []byte("mcpServers:\n  db: {url: \"http://127.0.0.1:9/mcp\"}\nbindings:\n  - server: db\n    params: {token: {source: tenant-tokens, ref: db}}\n")
	cfg, err := config.Parse(doc, config.FormatYAML, "backend.yaml")
	if err != nil {
		t.Fatalf("config.Parse refused a source the program supplies: %v", err)
	}
	h, err := host.New(host.Options{Config: cfg, Sources: map[string]bindings.Source{"tenant-tokens": tenantTokens}})
	if err != nil {
		t.Fatalf("host.New: %v", err)
	}
	h.Close()

	_, err = host.New(host.Options{Config: cfg})
	var he *host.Error
	if !errors.As(err, &he) || he.Kind != host.KindConfig || !errors.Is(err, config.ErrConfig) {
		t.Fatalf("without the source: %v, want a configuration error", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "backend.yaml: bindings[0].params.token.source") || !strings.Contains(msg, `"tenant-tokens"`) {
		t.Errorf("the message does not name the file, key and source: %s", msg)
	}
}
