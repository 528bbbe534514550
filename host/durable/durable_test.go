package durable_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
)

func calls(tool, id string) []model.ToolCall {
	return []model.ToolCall{{ID: "c1", Name: "db__" + tool, Arguments: `{"id":"` + id + `"}`}}
}

// A durable turn runs as in memory, and its conversation is in the
// database: a session re-created with its id in another process
// continues it.
func TestDurableTurnAndConversationSurviveTheProcess(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("lookup", "7")}
		store := b.openApprovals(t)
		p := start(t, b, srv, m, store, time.Minute, "", nil)
		events := drain(t, p.session("s1").Turn(context.Background(), "look up order 7", host.TurnOptions{}))
		end := lastEnd(t, events)
		if end.Reason != host.EndDone || end.Steps != 2 || !strings.Contains(end.Result, "lookup") {
			t.Fatalf("end %+v\n%s", end, describe(events))
		}
		if n := srv.count("lookup"); n != 1 {
			t.Fatalf("lookup ran %d times", n)
		}
		keys := srv.idempotencyKeys(t, "lookup")
		if len(keys) != 1 || !strings.HasPrefix(keys[0], "s1.") || !strings.HasSuffix(keys[0], "/c1") {
			t.Fatalf("idempotency keys %q", keys)
		}
		p.kill()

		p2 := start(t, b, srv, m, store, time.Minute, "", nil)
		s := p2.session("s1")
		drain(t, s.Turn(context.Background(), "and again", host.TurnOptions{}))
		got := s.Transcript()
		roles := make([]string, len(got))
		for i, msg := range got {
			roles[i] = string(msg.Role)
		}
		if want := "user assistant tool assistant user assistant tool assistant"; strings.Join(roles, " ") != want {
			t.Fatalf("transcript roles %q, want %q", roles, want)
		}
		for _, msg := range got {
			if strings.Contains(msg.Content, canarySession) || strings.Contains(msg.Content, canarySecret) {
				t.Fatalf("transcript holds a protected value: %q", msg.Content)
			}
		}
	})
}

// An approval asked by a process that was killed while it waited is
// voted from elsewhere; the next process resumes the turn: the call runs
// once, with the approved arguments, and the model is not asked again
// for the calls it made.
func TestApprovedWhileGoneRunsOnceOnResume(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("delete_order", "42")}
		store := b.openApprovals(t)
		raised := make(chan approvals.Approval, 4)
		p := start(t, b, srv, m, store, time.Hour, "", func(a approvals.Approval) { raised <- a })
		first := askAndKill(t, p, raised, "s2", "delete order 42")
		if srv.count("delete_order") != 0 {
			t.Fatal("the call ran before it was approved")
		}
		if a, err := store.Get(context.Background(), first.ID); err != nil || a.State != approvals.StatePending {
			t.Fatalf("after the kill the request is %v (%v), want pending", a.State, err)
		}
		// Another process votes (agenthost approvals approve).
		voter := b.openApprovals(t)
		if _, err := voter.Vote(context.Background(), first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
			t.Fatal(err)
		}

		p2 := start(t, b, srv, m, store, time.Hour, "", func(a approvals.Approval) { raised <- a })
		events := drain(t, p2.session("s2").Resume(context.Background()))
		end := lastEnd(t, events)
		if end.Reason != host.EndDone || !strings.Contains(end.Result, "delete_order") {
			t.Fatalf("end %+v\n%s", end, describe(events))
		}
		if n := srv.count("delete_order"); n != 1 {
			t.Fatalf("delete_order ran %d times", n)
		}
		again := waitFor(t, raised, "the resumed approval")
		if again.ID != first.ID {
			t.Fatalf("resumed under request %s, first asked %s", again.ID, first.ID)
		}
		if got := m.asked.Load(); got != 2 {
			t.Fatalf("the model was asked %d times, want 2 (the call, then the answer)", got)
		}
		// The conversation in the database holds the call's real result
		// once: nothing the killed run did after the kill reached it.
		stored, err := p2.engine.Store().Load(context.Background(), "s2")
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		for _, msg := range stored {
			if msg.Role == model.RoleTool {
				tools = append(tools, msg.Content)
			}
		}
		if len(tools) != 1 || !strings.Contains(tools[0], "delete_order") {
			t.Fatalf("stored tool results %q, want the call's one result", tools)
		}
		// A second resume finds nothing to do.
		if more := drain(t, p2.session("s2").Resume(context.Background())); len(more) != 0 {
			t.Fatalf("second resume: %s", describe(more))
		}
	})
}

// An approval not given before its deadline, with the process gone in
// between, runs nothing when the turn resumes.
func TestApprovalPastItsDeadlineRunsNothing(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		srv := newServer(t)
		m := &scriptModel{plan: calls("delete_order", "9")}
		store := b.openApprovals(t)
		raised := make(chan approvals.Approval, 4)
		p := start(t, b, srv, m, store, 2*time.Second, "", func(a approvals.Approval) { raised <- a })
		first := askAndKill(t, p, raised, "s3", "delete order 9")
		time.Sleep(time.Until(first.Request.Deadline) + 100*time.Millisecond)

		p2 := start(t, b, srv, m, store, 2*time.Second, "", nil)
		events := drain(t, p2.session("s3").Resume(context.Background()))
		end := lastEnd(t, events)
		if end.Reason != host.EndDone {
			t.Fatalf("end %+v\n%s", end, describe(events))
		}
		if n := srv.count("delete_order"); n != 0 {
			t.Fatalf("delete_order ran %d times after its deadline", n)
		}
		a, err := store.Get(context.Background(), first.ID)
		if err != nil || a.State != approvals.StateExpired {
			t.Fatalf("request %v (%v), want expired", a.State, err)
		}
		// A vote now is too late and changes nothing.
		if _, err := store.Vote(context.Background(), first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err == nil {
			t.Fatal("a vote after the deadline was accepted")
		}
	})
}

// The crash windows of a call, each ending in its documented outcome:
// killed after the decision record and before the send, the call is sent
// once on resume; killed after the send and before the result, an
// idempotent tool is sent again once (same idempotency key) and any other
// is reported as possibly run, never sent twice; killed after the result
// and before the conversation has it, the result is replayed from its
// checkpoint, not sent again.
func TestCrashWindows(t *testing.T) {
	cases := []struct {
		name, tool, crashAt string
		blockServer         bool
		wantSends           int
		wantResult          string // in the model's final answer
	}{
		{name: "before send", tool: "write_note", crashAt: "sent", wantSends: 1, wantResult: "write_note"},
		{name: "after send, not idempotent", tool: "write_note", blockServer: true, wantSends: 1, wantResult: "may or may not have run"},
		{name: "after send, idempotent", tool: "lookup", blockServer: true, wantSends: 2, wantResult: "lookup"},
		{name: "after result, before history", tool: "write_note", crashAt: "append-tool", wantSends: 1, wantResult: "write_note"},
	}
	backends(t, func(t *testing.T, b backend) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				srv := newServer(t)
				m := &scriptModel{plan: calls(tc.tool, "1")}
				store := b.openApprovals(t)
				id := "crash-" + strings.ReplaceAll(tc.name, " ", "-")
				p := start(t, b, srv, m, store, time.Minute, tc.crashAt, nil)
				if tc.blockServer {
					srv.blockNext(tc.tool)
				}
				done := runInBackground(p.session(id), "go")
				if tc.blockServer {
					waitFor(t, srv.hit, "the call at the server")
				} else {
					waitFor(t, p.crash.hit, "the crash point")
				}
				p.kill()
				if tc.blockServer {
					close(srv.release)
				}
				waitFor(t, done, "the killed turn's events")

				p2 := start(t, b, srv, m, store, time.Minute, "", nil)
				events := drain(t, p2.session(id).Resume(context.Background()))
				end := lastEnd(t, events)
				if end.Reason != host.EndDone || !strings.Contains(end.Result, tc.wantResult) {
					t.Fatalf("end %+v, want a result with %q\n%s", end, tc.wantResult, describe(events))
				}
				if n := srv.count(tc.tool); n != tc.wantSends {
					t.Fatalf("%s sent %d times, want %d", tc.tool, n, tc.wantSends)
				}
				keys := srv.idempotencyKeys(t, tc.tool)
				for _, k := range keys {
					if k == "" || k != keys[0] {
						t.Fatalf("idempotency keys %q: every send of one call carries the same key", keys)
					}
				}
				// The conversation holds the call's result once.
				tools := 0
				for _, msg := range p2.session(id).Transcript() {
					if msg.Role == model.RoleTool {
						tools++
					}
				}
				s3 := p2.session(id)
				drain(t, s3.Turn(context.Background(), "next", host.TurnOptions{}))
				tools = 0
				for _, msg := range s3.Transcript()[:4] {
					if msg.Role == model.RoleTool {
						tools++
					}
				}
				if tools != 1 {
					t.Fatalf("the first turn's conversation has %d tool results, want 1: %+v", tools, s3.Transcript())
				}
			})
		}
	})
}

// An approval binds to the policy revision and the tool definition (and
// the arguments) it was asked under: a process that resumes the call under
// a changed policy, or after the server changed the tool, asks again,
// under another request, and the approval given for the old one lets
// nothing run.
func TestApprovalUnderAnotherPolicyIsAskedAgain(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		askedAgainAfter(t, b, "s5", "5", func(srv *server, m *scriptModel, store approvals.Store, onRaised func(approvals.Approval)) *process {
			// The operator changed the policy meanwhile (the ask's timeout).
			return start(t, b, srv, m, store, 2*time.Hour, "", onRaised)
		})
	})
}

// askedAgainAfter kills a process while its call (delete_order of order)
// waits, approves the request, and resumes the turn in the process resume
// starts after changing what the call is decided under: the call must ask
// again, under another request (which is denied), and run nowhere. It
// returns the new request.
func askedAgainAfter(t *testing.T, b backend, session, order string, resume func(srv *server, m *scriptModel, store approvals.Store, onRaised func(approvals.Approval)) *process) approvals.Approval {
	t.Helper()
	w := killedWhileAsking(t, b, session, order, time.Hour)
	srv, m, store, first := w.srv, w.m, w.store, w.first
	raised := make(chan approvals.Approval, 4)
	if _, err := store.Vote(context.Background(), first.ID, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
		t.Fatal(err)
	}
	p2 := resume(srv, m, store, func(a approvals.Approval) {
		raised <- a
		if _, err := store.Vote(context.Background(), a.ID, approvals.Resolution{ApproverID: "bob", Note: "no longer", Allow: false}); err != nil {
			t.Error(err)
		}
	})
	lastEnd(t, drain(t, p2.session(session).Resume(context.Background())))
	again := waitFor(t, raised, "the new approval request")
	if again.ID == first.ID {
		t.Fatal("the call resumed under the approval asked for what it no longer is")
	}
	if n := srv.count("delete_order") + p2.srv.count("delete_order"); n != 0 {
		t.Fatalf("delete_order ran %d times", n)
	}
	return again
}

// A durable session whose History cannot append at positions is refused
// before anything runs: a replay would store its messages twice.
func TestDurableTurnNeedsASequencedHistory(t *testing.T) {
	b := backend{name: "sqlite", dsn: "sqlite:" + t.TempDir() + "/durable.db", approvalsDSN: t.TempDir() + "/approvals.db"}
	srv := newServer(t)
	m := &scriptModel{plan: calls("lookup", "1")}
	p := start(t, b, srv, m, b.openApprovals(t), time.Minute, "", nil)
	s := p.host.NewSession(host.SessionOptions{ID: "plain", History: host.NewMemoryHistory()})
	events := drain(t, s.Turn(context.Background(), "go", host.TurnOptions{}))
	end := lastEnd(t, events)
	if end.Reason != host.EndError || m.asked.Load() != 0 || srv.count("lookup") != 0 {
		t.Fatalf("end %+v, model asked %d times\n%s", end, m.asked.Load(), describe(events))
	}
}

// The same for a tool whose definition (its pin hash) changed.
func TestApprovalForAnotherDefinitionIsAskedAgain(t *testing.T) {
	backends(t, func(t *testing.T, b backend) {
		askedAgainAfter(t, b, "s6", "6", func(_ *server, m *scriptModel, store approvals.Store, onRaised func(approvals.Approval)) *process {
			// Meanwhile the server changed the tool (its description).
			changed := newServerWith(t, strings.Replace(toolsJSON, `{"name": "delete_order",`, `{"name": "delete_order", "description": "now also deletes the customer",`, 1))
			return start(t, b, changed, m, store, time.Hour, "", onRaised)
		})
	})
}
