package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/stores"
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

// A host given a keyed audit database (stores.Databases.ChainKey) writes
// keyed records to it; the database's VerifyAudit checks them with the
// key and refuses to judge them without it.
func TestHostKeyedAuditStore(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	cfg := &config.Config{Approvals: readsAllowed(), Audit: config.Audit{Store: "sqlite:" + filepath.Join(t.TempDir(), "audit.db")}}
	cfg.ApplyDefaults()
	ctx := context.Background()
	db, err := stores.Databases{ChainKey: key}.OpenAuditSink(ctx, cfg.Audit.Store)
	if err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: cfg, AuditDatabase: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		if err := h.audit.Write(ctx, &auditlog.Record{SessionID: "s", CallID: id, TS: time.Now()}); err != nil {
			t.Fatalf("audit write: %v", err)
		}
	}
	_ = h.Close()
	if err := db.Close(); err != nil {
		t.Fatalf("the host closed the audit database it was given: %v", err)
	}
	reports, err := stores.Databases{ChainKey: key}.VerifyAudit(ctx, cfg.Audit.Store)
	if err != nil || len(reports) != 1 || reports[0].Records != 2 || reports[0].Keyed != 2 || reports[0].Broken != nil {
		t.Errorf("VerifyAudit with the key: %+v, %v; want 2 intact keyed records", reports, err)
	}
	if _, err := (stores.Databases{}).VerifyAudit(ctx, cfg.Audit.Store); !errors.Is(err, auditlog.ErrChainKeyRequired) {
		t.Errorf("VerifyAudit without the key: %v, want ErrChainKeyRequired", err)
	}
}
