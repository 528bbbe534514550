package verify

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
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
		r := &auditlog.Record{TS: time.Now(), SessionID: "s", Phase: auditlog.PhaseDecision, Arguments: json.RawMessage(`{}`)}
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
			f, s := cmdtest.Factory(t, "", "")
			f.ConfigPath = tt.cfg
			err := cmdtest.Parse(NewCmdVerify(f, nil))
			msg := s.Out.String() + s.ErrOut.String()
			if err != nil {
				msg += err.Error()
			}
			if code := cmdtest.Code(err); code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("exit %d, want %d saying %q\n%s", code, tt.code, tt.want, msg)
			}
			if strings.Contains(msg, key) {
				t.Errorf("the key was printed")
			}
		})
	}
}

func TestVerifyNoRecords(t *testing.T) {
	dir := t.TempDir()
	f, s := cmdtest.Factory(t, "audit:\n  path: \"\"\n  store: sqlite:"+filepath.Join(dir, "audit.db")+"\n", "")
	if err := cmdtest.Parse(NewCmdVerify(f, nil)); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "no audit records\n" {
		t.Errorf("stdout %q", s.Out.String())
	}
	f, s = cmdtest.Factory(t, "audit:\n  path: \"\"\n  store: sqlite:"+filepath.Join(dir, "audit.db")+"\n", "")
	if err := cmdtest.Parse(NewCmdVerify(f, nil), "--json"); err != nil {
		t.Fatal(err)
	}
	if s.Out.String() != "[]\n" {
		t.Errorf("--json: %q, want an empty array", s.Out.String())
	}
}

func TestPrintReports(t *testing.T) {
	var b strings.Builder
	printReports(&b, []auditlog.ChainReport{
		{Chain: "a", Records: 3},
		{Chain: "b", Records: 3, Keyed: 3},
		{Chain: "c", Records: 5, Keyed: 2},
		{Chain: "d", Records: 4, Broken: &auditlog.BrokenChainError{Seq: 5, Reason: "hash mismatch"}},
	})
	want := "chain a: 3 records, intact\nchain b: 3 records, intact, keyed\n" +
		"chain c: 5 records, intact; the last 2 keyed, the first 3 unkeyed (SHA-256 only)\n" +
		"chain d: BROKEN at record 5: hash mismatch (4 records before it check out)\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
