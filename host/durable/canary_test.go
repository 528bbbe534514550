package durable_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/dbscan"
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
		a := askAndKill(t, p, raised, "leak", "investigate order 7")
		if _, err := b.openApprovals(t).Vote(context.Background(), a.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
			t.Fatal(err)
		}
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
		// The engine's checkpoints and turn inputs are base64: the scan
		// decodes them (a key only the turn's input has).
		for _, want := range []string{"delete_order", "investigate order 7", `"trustLevel"`} {
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
// (the engine's and the approvals store's, and SQLite's WAL files) as
// text, base64 values decoded (internal/dbscan).
func scanRows(t *testing.T, b backend) string {
	t.Helper()
	ctx := context.Background()
	if b.name == "sqlite" {
		var out strings.Builder
		for _, path := range []string{strings.TrimPrefix(b.dsn, "sqlite:"), b.approvalsDSN} {
			text, err := dbscan.SQLite(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(text)
		}
		return out.String()
	}
	text, tables, err := dbscan.Postgres(ctx, b.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if tables < 5 {
		t.Fatalf("only %d tables", tables)
	}
	return text
}

// A prompt that holds a protected value (a resolved secret, a session
// value a binding takes) reaches the model masked, and so the turn's
// input, the conversation and every row hold it masked: the transcript
// is what the model saw.
func TestPromptWithAProtectedValueIsMasked(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("lookup", "7")}
		p := start(t, b, srv, m, b.openApprovals(t), time.Minute, "", nil)
		s := p.session("prompted")
		// The first turn's call resolves the secret.
		if end := lastEnd(t, drain(t, s.Turn(context.Background(), "look up order 7", host.TurnOptions{}))); end.Reason != host.EndDone {
			t.Fatalf("end %+v", end)
		}
		prompt := "my token is " + canarySecret + " on " + canarySession + ", look up order 8"
		if end := lastEnd(t, drain(t, s.Turn(context.Background(), prompt, host.TurnOptions{}))); end.Reason != host.EndDone {
			t.Fatalf("end %+v", end)
		}
		seen := m.seen()
		if !strings.Contains(seen, "look up order 8") {
			t.Fatalf("the model never saw the second prompt:\n%s", seen)
		}
		transcript := jsonLines(s.Transcript())
		p.kill()
		rows := scanRows(t, b)
		for where, text := range map[string]string{"the model's requests": seen, "the transcript": transcript, "a row": rows} {
			for _, canary := range []string{canarySession, canarySecret} {
				if i := strings.Index(text, canary); i >= 0 {
					t.Errorf("%s holds %s: ...%s...", where, canary, text[max(0, i-200):min(len(text), i+100)])
				}
			}
		}
	})
}
