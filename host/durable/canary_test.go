package durable_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// After a scenario that touches every path that writes (a call whose
// result echoes the secure values, an injection that names a secure
// parameter, a model call that holds a protected value, an ask approved
// while the process was gone and resumed), no row of any table the engine
// or the stores wrote holds a canary. The scan itself is checked: it
// reads the rows (it finds what the calls did write) and the canaries did
// reach the server.
func TestCanariesInNoRow(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: []model.ToolCall{
			{ID: "c1", Name: "db__lookup", Arguments: `{"id":"7"}`},
			{ID: "c2", Name: "db__lookup", Arguments: `{"id":"7","instance":"payroll"}`},
			{ID: "c3", Name: "db__write_note", Arguments: `{"text":"` + canarySession + `"}`},
			{ID: "c4", Name: "db__delete_order", Arguments: `{"id":"8"}`},
		}}
		store := b.openApprovals(t)
		raised := make(chan approvals.Approval, 4)
		p := start(t, b, srv, m, store, time.Hour, "", func(a approvals.Approval) { raised <- a })
		askKillAndApprove(t, b, p, raised, "leak", "investigate order 7")
		p2 := start(t, b, srv, m, store, time.Hour, "", nil)
		events := drain(t, p2.session("leak").Resume(context.Background()))
		if end := lastEnd(t, events); end.Reason != host.EndDone {
			t.Fatalf("end %+v\n%s", end, describe(events))
		}
		// The lookup runs beside the ask; when the kill came before its
		// result was checkpointed, it is sent again once (it is idempotent),
		// under the same key.
		keys := srv.idempotencyKeys(t, "lookup")
		if srv.count("delete_order") != 1 || srv.count("write_note") != 0 || len(keys) < 1 || len(keys) > 2 || keys[0] != keys[len(keys)-1] {
			t.Fatalf("calls: lookup %q, write_note %d, delete_order %d", keys, srv.count("write_note"), srv.count("delete_order"))
		}
		p2.kill()

		// The canaries were sent to the server (so their absence below
		// means something).
		sent := ""
		for _, r := range srv.srv.Recording().Messages("tools/call") {
			sent += string(r.Message)
		}
		if !strings.Contains(sent, canarySession) || !strings.Contains(sent, canarySecret) {
			t.Fatal("the canaries never reached the server: the scenario tests nothing")
		}
		rows := scanRows(t, b)
		for _, want := range []string{"delete_order", "investigate order 7"} {
			if !strings.Contains(rows, want) {
				t.Fatalf("the scan read no row holding %q: it reads nothing", want)
			}
		}
		for _, canary := range []string{canarySession, canarySecret} {
			if i := strings.Index(rows, canary); i >= 0 {
				t.Errorf("a row holds %s: ...%s...", canary, rows[max(0, i-300):min(len(rows), i+100)])
			}
		}
	})
}

// scanRows renders every row of every table of the backend's databases
// (the engine's and the approvals store's) as text.
func scanRows(t *testing.T, b backend) string {
	t.Helper()
	var out strings.Builder
	if b.name == "sqlite" {
		for _, path := range []string{strings.TrimPrefix(b.dsn, "sqlite:"), b.approvalsDSN} {
			out.WriteString(scanSQLite(t, path))
		}
		// WAL files hold pages not yet checkpointed: read them as bytes.
		for _, path := range []string{strings.TrimPrefix(b.dsn, "sqlite:"), b.approvalsDSN} {
			for _, suffix := range []string{"", "-wal"} {
				raw, _ := os.ReadFile(path + suffix)
				out.Write(raw)
			}
		}
		return out.String()
	}
	return scanPostgres(t, b.dsn)
}

func scanSQLite(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Clean(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	names, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for names.Next() {
		var n string
		_ = names.Scan(&n)
		tables = append(tables, n)
	}
	names.Close()
	var out strings.Builder
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "%s:", table)
			for _, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, " %v", v)
			}
			out.WriteByte('\n')
		}
		rows.Close()
	}
	return out.String()
}

func scanPostgres(t *testing.T, dsn string) string {
	t.Helper()
	return pgtest.Rows(t, dsn)
}
