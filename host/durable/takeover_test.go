package durable_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
)

// resumeUnattached makes p resume every turn its engine runs with no
// caller (Host.OnUnattachedTurn), and delivers each turn's record and
// events.
type resumed struct {
	id     string
	rec    host.TurnRecord
	events []host.Event
}

func resumeUnattached(t *testing.T, p *process) <-chan resumed {
	out := make(chan resumed, 4)
	p.host.OnUnattachedTurn(func(id string, rec host.TurnRecord) {
		out <- resumed{id, rec, drain(t, p.session(rec.SessionID).Resume(context.Background()))}
	})
	return out
}

// askKillAndApprove is askAndKill, then bob approves the request from
// another process.
func askKillAndApprove(t *testing.T, b backend, p *process, raised <-chan approvals.Approval, session, prompt string) approvals.Approval {
	t.Helper()
	a := askAndKill(t, p, raised, session, prompt)
	if _, err := b.openApprovals(t).Vote(context.Background(), a.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
		t.Fatal(err)
	}
	return a
}

// A turn left by a killed process is handed to the next process's
// OnUnattachedTurn, even when the engine took it up before the handler
// was set (at host.New): the handler resumes it, and the approved call
// runs once.
func TestUnattachedTurnIsHandedOver(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("delete_order", "42")}
		store := b.openApprovals(t)
		raised := make(chan approvals.Approval, 4)
		p := start(t, b, srv, m, store, time.Hour, "", func(a approvals.Approval) { raised <- a })
		askKillAndApprove(t, b, p, raised, "s3", "delete order 42")
		p2 := start(t, b, srv, m, store, time.Hour, "", nil)
		time.Sleep(1500 * time.Millisecond) // the engine's queue runs the turn before a handler is set
		got := waitFor(t, resumeUnattached(t, p2), "the handed-over turn")
		if got.rec.SessionID != "s3" || !strings.HasPrefix(got.id, "s3.") {
			t.Fatalf("handed turn %s of session %q", got.id, got.rec.SessionID)
		}
		if end := lastEnd(t, got.events); end.Reason != host.EndDone {
			t.Fatalf("end %+v\n%s", end, describe(got.events))
		}
		if n := srv.count("delete_order"); n != 1 {
			t.Fatalf("delete_order ran %d times", n)
		}
	})
}

// A process killed for good loses its lease: of two survivors exactly
// one takes its turns over (once), and the turn waiting for approval
// completes there, its call run once.
func TestLeaseTakeOver(t *testing.T) {
	func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("delete_order", "7")}
		store := b.openApprovals(t)
		raised := make(chan approvals.Approval, 4)
		lease := durable.LeaseOptions{Every: 100 * time.Millisecond, Timeout: 500 * time.Millisecond}
		keep := func(p *process, opts durable.LeaseOptions) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			errc := make(chan error, 1)
			go func() { errc <- p.engine.KeepLease(ctx, opts) }()
			t.Cleanup(func() {
				cancel()
				if err := <-errc; err != nil {
					t.Errorf("KeepLease: %v", err)
				}
			})
		}
		a := startAs(t, "a", b, srv, m, store, time.Hour, "", func(ap approvals.Approval) { raised <- ap })
		keep(a, lease)
		time.Sleep(300 * time.Millisecond) // a's lease is written
		askKillAndApprove(t, b, a, raised, "s4", "delete order 7")
		var takeovers atomic.Int32
		taken := make(chan string, 4)
		survivors := make([]<-chan resumed, 2)
		for i, id := range []string{"b", "c"} {
			p := startAs(t, id, b, srv, m, store, time.Hour, "", nil)
			survivors[i] = resumeUnattached(t, p)
			opts := lease
			opts.OnTakeOver = func(executor string, turns int) {
				takeovers.Add(1)
				if executor != "a" || turns != 1 {
					t.Errorf("took over %s with %d turns, want a with 1", executor, turns)
				}
				taken <- id
			}
			keep(p, opts)
		}
		waitFor(t, taken, "the take-over")
		var got resumed
		select {
		case got = <-survivors[0]:
		case got = <-survivors[1]:
		case <-time.After(30 * time.Second):
			t.Fatal("no survivor resumed the turn")
		}
		if end := lastEnd(t, got.events); end.Reason != host.EndDone || got.rec.SessionID != "s4" {
			t.Fatalf("session %q end %+v\n%s", got.rec.SessionID, end, describe(got.events))
		}
		time.Sleep(time.Second) // every tick of both survivors after the take-over
		if n := takeovers.Load(); n != 1 {
			t.Errorf("%d take-overs, want 1", n)
		}
		if n := srv.count("delete_order"); n != 1 {
			t.Errorf("delete_order ran %d times", n)
		}
	}(t, postgresBackend(t))
}

// SQLite is one node: there is no lease to keep.
func TestNoLeaseOnSQLite(t *testing.T) {
	e, err := durable.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "d.db"), durable.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.KeepLease(context.Background(), durable.LeaseOptions{}); !errors.Is(err, durable.ErrNoLease) {
		t.Errorf("KeepLease on SQLite: %v, want ErrNoLease", err)
	}
}

// Session.ResumeTurn takes up the named unfinished turn alone: an id that
// is not one of the session's unfinished turns delivers nothing and leaves
// the turn waiting; the turn's own id resumes it to its end, its approved
// call run once.
func TestResumeTurnTakesUpThatTurnAlone(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		w := killedWhileAsking(t, b, "s9", "9", time.Hour)
		if _, err := w.store.Vote(ctx, w.first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
			t.Fatal(err)
		}
		p := start(t, b, w.srv, w.m, w.store, time.Hour, "", nil)
		ids, err := p.host.UnfinishedTurns(ctx, "s9")
		if err != nil || len(ids) != 1 {
			t.Fatalf("unfinished turns %v %v, want one", ids, err)
		}
		pending := ids[0]
		for _, tc := range []struct {
			name   string
			id     string
			events bool // the turn is resumed: its events, to its end
		}{
			{name: "another turn id of the session", id: "s9.0000000000000001.00000001"},
			{name: "the turn of another session", id: "s8" + strings.TrimPrefix(pending, "s9")},
			{name: "the unfinished turn", id: pending, events: true},
		} {
			got := drain(t, p.session("s9").ResumeTurn(ctx, tc.id))
			if !tc.events {
				if len(got) > 0 {
					t.Errorf("%s: %d events\n%s", tc.name, len(got), describe(got))
				}
				if ids, err := p.host.UnfinishedTurns(ctx, "s9"); err != nil || !slices.Equal(ids, []string{pending}) {
					t.Errorf("%s: unfinished turns %v %v, want %s", tc.name, ids, err, pending)
				}
				continue
			}
			if end := lastEnd(t, got); end.Reason != host.EndDone {
				t.Fatalf("%s: end %+v\n%s", tc.name, end, describe(got))
			}
		}
		if n := w.srv.count("delete_order"); n != 1 {
			t.Errorf("delete_order ran %d times", n)
		}
	})
}
