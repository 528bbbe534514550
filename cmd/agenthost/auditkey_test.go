package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// TestAuditVerifyWithChainKey: `audit verify` reads the chain key from
// audit.chainKeyFile and checks the keyed records with it; without the key
// a keyed chain is a configuration error, not a verdict.
func TestAuditVerifyWithChainKey(t *testing.T) {
	t.Setenv("AGENTHOST_AUDIT_KEY", "")
	dir := t.TempDir()
	db, keyFile := filepath.Join(dir, "audit.db"), filepath.Join(dir, "chain.key")
	key := "0123456789abcdef0123456789abcdef"
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sink, err := sqlitestore.OpenAuditSink(context.Background(), db, sqlitestore.AuditOptions{ChainKey: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := &approvals.Record{TS: time.Now(), SessionID: "s", Phase: approvals.PhaseDecision, Arguments: json.RawMessage(`{}`)}
		if err := sink.Write(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	config := func(name, extra string) string {
		p := filepath.Join(dir, name)
		text := "audit:\n  path: \"\"\n  store: sqlite:" + db + "\n" + extra
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, cfg string
		code      int
		want      string
	}{
		{"with the key file", config("keyed.yaml", "  chainKeyFile: "+keyFile+"\n"), 0, "chain main: 3 records, intact, keyed"},
		{"without the key", config("plain.yaml", ""), cmdutil.ExitUsage, "the audit chain is keyed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			a := &app{f: cmdutil.New(&cmdutil.IOStreams{In: strings.NewReader(""), Out: &stdout, ErrOut: &stderr})}
			code := a.run(context.Background(), []string{"--config", tt.cfg, "audit", "verify"})
			if code != tt.code || !strings.Contains(stdout.String()+stderr.String(), tt.want) {
				t.Errorf("exit %d, want %d saying %q\nstdout: %s\nstderr: %s", code, tt.code, tt.want, stdout.String(), stderr.String())
			}
			if strings.Contains(stdout.String()+stderr.String(), key) {
				t.Errorf("the key was printed")
			}
		})
	}
}
