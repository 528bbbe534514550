package e2e

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestToolFilterGlobs: tool filters use the configuration's glob dialect,
// where * crosses "/": deny drop_* hides drop_db/all (and a call of it is
// refused, nothing sent), allow * offers names with "/", a bad pattern is a
// configuration error naming the key, and a tool with an empty name is
// excluded with a reason.
func TestToolFilterGlobs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "drop_db", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "dropped"}},
		{"name": "drop_db/all", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "dropped all"}},
		{"name": "k8s/pods.delete", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "deleted"}},
		{"name": "", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "nameless"}},
	})
	tests := []struct {
		name   string
		filter obj
		want   map[string]string // tool -> status
	}{
		{"deny drop_*", obj{"deny": []string{"drop_*"}},
			map[string]string{"drop_db": "hidden", "drop_db/all": "hidden", "k8s/pods.delete": "active", "": "excluded"}},
		{"allow *", obj{"allow": []string{"*"}},
			map[string]string{"drop_db": "active", "drop_db/all": "active", "k8s/pods.delete": "active", "": "excluded"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			record := filepath.Join(t.TempDir(), "record.jsonl")
			srv := stdioServer(tools, record)
			srv["tools"] = tc.filter
			cfg := writeConfig(t, obj{"mcpServers": obj{"srv": srv}})
			r := run(t, nil, "--config", cfg, "tools", "--json")
			wantCode(t, r, 0)
			s := decodeStdout[toolsDoc](t, r).server(t, "srv")
			for name, want := range tc.want {
				tl := s.tool(t, name)
				if tl.Status != want {
					t.Errorf("%q: %s (%s), want %s", name, tl.Status, reasonOf(tl), want)
				}
				if name == "" && !strings.Contains(reasonOf(tl), "empty name") {
					t.Errorf("the nameless tool's reason: %q", reasonOf(tl))
				}
			}
			if tc.want["drop_db/all"] == "hidden" {
				wantCallError(t, run(t, nil, "--config", cfg, "call", "srv", "drop_db/all", "--json"), 6, "unavailable")
				if n := len(withMethod(readRecord(t, record), "tools/call")); n != 0 {
					t.Errorf("the server got %d tools/call for a denied tool", n)
				}
			}
		})
	}
	t.Run("bad pattern", func(t *testing.T) {
		t.Parallel()
		srv := stdioServer(tools, "")
		srv["tools"] = obj{"deny": []string{"drop_["}}
		cfg := writeConfig(t, obj{"mcpServers": obj{"srv": srv}})
		r := run(t, nil, "--config", cfg, "tools", "--json")
		wantCode(t, r, 2)
		if !strings.Contains(r.stderr, "mcpServers.srv.tools.deny[0]") || !strings.Contains(r.stderr, "unterminated character class") {
			t.Errorf("the error does not name the key and the problem\n%s", r)
		}
	})
}
