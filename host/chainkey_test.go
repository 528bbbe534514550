package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/config"
)

// TestAuditChainKey: the audit chain key comes from AGENTHOST_AUDIT_KEY or
// audit.chainKeyFile, never both, at least 16 bytes, and no error quotes
// it.
func TestAuditChainKey(t *testing.T) {
	const canary = "chain-key-canary-0123456789"
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, short := write("good", canary+"\n"), write("short", "canary\n")
	tests := []struct {
		name, env, file string
		want            string // the key; "" for none
		wantErr         string
	}{
		{"neither", "", "", "", ""},
		{"environment", canary, "", canary, ""},
		{"file, final newline removed", "", good, canary, ""},
		{"both", canary, good, "", "set one"},
		{"short file", "", short, "", "fewer than 16"},
		{"short environment", "canary", "", "", "fewer than 16"},
		{"missing file", "", filepath.Join(dir, "none"), "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &config.Config{Audit: config.Audit{ChainKeyFile: tt.file}}
			key, err := AuditChainKey(cfg, func(k string) string {
				if k == EnvAuditKey {
					return tt.env
				}
				return ""
			})
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || KindOf(err) != KindConfig {
					t.Fatalf("err = %v, want a config error saying %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "canary\n") {
					t.Errorf("the error quotes the key: %v", err)
				}
			case err != nil:
				t.Fatal(err)
			case string(key) != tt.want:
				t.Errorf("key %q, want %q", key, tt.want)
			}
		})
	}
}
