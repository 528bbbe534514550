package durable_test

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
)

// restartWhileWaiting takes the session's unfinished turn up in a new
// process n times, killing each while its call waits for the approval
// again, and returns the requests each raised.
func restartWhileWaiting(t *testing.T, n int, b backend, srv *server, m *scriptModel, store approvals.Store, askTimeout time.Duration, session string) []approvals.Approval {
	t.Helper()
	var asked []approvals.Approval
	for range n {
		raised := make(chan approvals.Approval, 4)
		p := start(t, b, srv, m, store, askTimeout, "", func(a approvals.Approval) { raised <- a })
		done := make(chan []host.Event, 1)
		go func() { done <- drain(t, p.session(session).Resume(context.Background())) }()
		asked = append(asked, waitFor(t, raised, "the approval asked again"))
		p.kill()
		waitFor(t, done, "the killed resume's events")
	}
	return asked
}

// sentArguments are the arguments of the calls to tool the server
// received, in order.
func (s *server) sentArguments(t *testing.T, tool string) []string {
	t.Helper()
	var out []string
	for _, c := range s.received(t, tool) {
		out = append(out, string(c.Arguments))
	}
	return out
}

// A call waits in human time for an approval with an hour's deadline
// while its process is restarted several times: each restart asks under
// the same request with the deadline it was first raised with, and the
// vote, cast from another process after the last restart, lets the call
// run once, with the arguments that were approved.
func TestLongApprovalWaitAcrossRestarts(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		w := killedWhileAsking(t, b, "long", "42", time.Hour)
		srv, m, store, first := w.srv, w.m, w.store, w.first
		if left := time.Until(first.Request.Deadline); left < 59*time.Minute || left > time.Hour {
			t.Fatalf("the request's deadline is in %s, want an hour", left)
		}
		for i, a := range restartWhileWaiting(t, 3, b, srv, m, store, time.Hour, "long") {
			if a.ID != first.ID || !a.Request.Deadline.Equal(first.Request.Deadline) || a.State != approvals.StatePending {
				t.Fatalf("restart %d asked %s (deadline %s, %s), want %s pending until %s", i+1, a.ID, a.Request.Deadline, a.State, first.ID, first.Request.Deadline)
			}
		}
		if n := srv.count("delete_order"); n != 0 {
			t.Fatalf("delete_order ran %d times before its approval", n)
		}
		voter := b.openApprovals(t)
		if _, err := voter.Vote(context.Background(), first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
			t.Fatal(err)
		}
		p2 := start(t, b, srv, m, store, time.Hour, "", nil)
		end := lastEnd(t, drain(t, p2.session("long").Resume(context.Background())))
		if end.Reason != host.EndDone || !strings.Contains(end.Result, "delete_order") {
			t.Fatalf("end %+v", end)
		}
		args := srv.sentArguments(t, "delete_order")
		if len(args) != 1 || !sameJSON(t, args[0], first.Request.Arguments) {
			t.Fatalf("delete_order was sent with %q, want once with the approved %s", args, first.Request.Arguments)
		}
		if got := m.asked.Load(); got != 2 {
			t.Fatalf("the model was asked %d times, want 2", got)
		}
	})
}

// The same wait with a deadline that passes while the process is gone
// and restarted: a vote after the deadline is refused, and the call never
// runs.
func TestApprovalAnsweredAfterItsDeadlineRunsNothing(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		const deadline = 4 * time.Second
		w := killedWhileAsking(t, b, "late", "43", deadline)
		srv, m, store, first := w.srv, w.m, w.store, w.first
		for _, a := range restartWhileWaiting(t, 2, b, srv, m, store, deadline, "late") {
			if a.ID != first.ID || !a.Request.Deadline.Equal(first.Request.Deadline) {
				t.Fatalf("a restart asked %s until %s, want %s until %s", a.ID, a.Request.Deadline, first.ID, first.Request.Deadline)
			}
		}
		time.Sleep(time.Until(first.Request.Deadline) + 200*time.Millisecond)
		voter := b.openApprovals(t)
		if _, err := voter.Vote(context.Background(), first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err == nil {
			t.Fatal("a vote after the deadline was accepted")
		}
		p2 := start(t, b, srv, m, store, deadline, "", nil)
		end := lastEnd(t, drain(t, p2.session("late").Resume(context.Background())))
		if end.Reason != host.EndDone {
			t.Fatalf("end %+v", end)
		}
		if n := srv.count("delete_order"); n != 0 {
			t.Fatalf("delete_order ran %d times after its deadline", n)
		}
		if a, err := store.Get(context.Background(), first.ID); err != nil || a.State != approvals.StateExpired {
			t.Fatalf("request %v (%v), want expired", a.State, err)
		}
	})
}

// The same for other arguments: the call a turn resumes holds other
// arguments than were approved (here its model checkpoint was rewritten in
// the database).
func TestApprovalForOtherArgumentsIsAskedAgain(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		again := askedAgainAfter(t, b, "s7", "5", func(srv *server, m *scriptModel, store approvals.Store, onRaised func(approvals.Approval)) *process {
			rewriteCheckpoints(t, b, "model", `{\"id\":\"5\"}`, `{\"id\":\"6\"}`)
			return start(t, b, srv, m, store, time.Hour, "", onRaised)
		})
		if !strings.Contains(string(again.Request.Arguments), `"6"`) {
			t.Fatalf("the new request asks for %s, want the changed arguments", again.Request.Arguments)
		}
	})
}

// rewriteCheckpoints replaces old with new in the outputs of the engine's
// steps named step (DBOS keeps them as base64 of their JSON), as someone
// with write access to the database could.
func rewriteCheckpoints(t *testing.T, b backend, step, old, new string) {
	t.Helper()
	ctx := context.Background()
	type row struct {
		wf  string
		fn  int64
		out string
	}
	rewrite := func(r row) string {
		raw, err := base64.StdEncoding.DecodeString(r.out)
		if err != nil {
			t.Fatalf("checkpoint %s/%d is not base64: %v", r.wf, r.fn, err)
		}
		if !strings.Contains(string(raw), old) {
			t.Fatalf("checkpoint %s/%d does not hold %s: %s", r.wf, r.fn, old, raw)
		}
		return base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), old, new)))
	}
	driver, dsn, table, rebind := "sqlite", strings.TrimPrefix(b.dsn, "sqlite:"), "operation_outputs", func(q string) string { return q }
	if b.name == "postgres" {
		driver, table = "pgx", "dbos.operation_outputs"
		rebind = func(q string) string {
			for i := 1; strings.Contains(q, "?"); i++ {
				q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
			}
			return q
		}
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q, err := db.QueryContext(ctx, rebind(`SELECT workflow_uuid, function_id, output FROM `+table+` WHERE function_name = ?`), step)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for q.Next() {
		var r row
		if err := q.Scan(&r.wf, &r.fn, &r.out); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	q.Close()
	for _, r := range rows {
		if _, err := db.ExecContext(ctx, rebind(`UPDATE `+table+` SET output = ? WHERE workflow_uuid = ? AND function_id = ?`), rewrite(r), r.wf, r.fn); err != nil {
			t.Fatal(err)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("no checkpoint of a %s step", step)
	}
}

func sameJSON(t *testing.T, a string, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
