package serve

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/serve/internal/sharedstore"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// answerHold is a replica's engine whose turns, once their answer is
// appended (which takes the turn out of the engine's index of unfinished
// turns), stay there until the engine stops: the replica dies before the
// workflow records its outcome. held is sent the workflow's id. With
// untag its turns are started without a Tag, as by an earlier version.
type answerHold struct {
	*durable.Engine
	held  chan string
	untag bool

	mu       sync.Mutex
	wctx     context.Context
	workflow string
}

func (a *answerHold) Start(run host.DurableTurnFunc) error {
	return a.Engine.Start(func(ctx context.Context, steps host.Steps, rec host.TurnRecord) error {
		a.mu.Lock()
		a.wctx, a.workflow = ctx, steps.TurnID()
		a.mu.Unlock()
		return run(ctx, steps, rec)
	})
}

func (a *answerHold) RunTurn(ctx context.Context, id string, rec host.TurnRecord) error {
	if a.untag {
		rec.Tag = ""
	}
	return a.Engine.RunTurn(ctx, id, rec)
}

func (a *answerHold) History() host.History { return holdHistory{a.Engine.Store(), a} }

type holdHistory struct {
	*durable.Store
	a *answerHold
}

func (h holdHistory) AppendAt(ctx context.Context, id string, at int, msgs ...model.Message) error {
	if err := h.Store.AppendAt(ctx, id, at, msgs...); err != nil {
		return err
	}
	if len(msgs) != 1 || msgs[0].Role != model.RoleAssistant || len(msgs[0].ToolCalls) > 0 {
		return nil
	}
	h.a.mu.Lock()
	wctx, workflow := h.a.wctx, h.a.workflow
	h.a.mu.Unlock()
	h.a.held <- workflow
	<-wctx.Done()
	return errors.New("the replica died after the answer's append")
}

// workflowStatus is the engine's status of workflow id.
func workflowStatus(t *testing.T, dsn, id string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var status string
	if err := conn.QueryRow(ctx, `SELECT status FROM dbos.workflow_status WHERE workflow_uuid = $1`, id).Scan(&status); err != nil {
		t.Fatal(err)
	}
	return status
}

// eventually waits up to 30 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestTakenUpTurnWritesOnlyItsOwn: a replica dies once its turn's answer
// is stored (the turn out of the engine's index of unfinished turns) but
// before the workflow recorded its outcome; another replica starts the
// session's next turn; then the engine takes the first workflow up
// again. It finishes, and writes nothing to the turn the session's record
// names now: that turn's events and record are as that turn left them. A
// workflow that names no served turn (one of an earlier version) is taken
// up into the record's turn, as before.
func TestTakenUpTurnWritesOnlyItsOwn(t *testing.T) {
	cluster := pgtest.Start(t)
	for _, tc := range []struct {
		name     string
		untagged bool   // the workflow's record has no Tag (an earlier version's)
		log      string // what the replica that takes it up logs
	}{
		{name: "tagged", log: "it was finished with its events discarded"},
		{name: "earlier version", untagged: true, log: "taking up a durable turn left unfinished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := cluster.NewDatabase(t)
			hold := &answerHold{held: make(chan string, 1), untag: tc.untagged}
			a := sharedReplicaWith(t, dsn, "a", testSealKey, nil, func(e *durable.Engine) host.Durability {
				hold.Engine = e
				return hold
			})
			b := sharedReplica(t, dsn, "b", testSealKey, nil)
			s := a.createSession(map[string]string{"token": "t"})
			resp := a.startTurn(s.ID, "first answer")
			oldTurn := resp.Header.Get("Agenthost-Turn-Id")
			var workflow string
			select {
			case workflow = <-hold.held:
			case <-time.After(30 * time.Second):
				t.Fatal("the first turn's answer was never appended")
			}
			a.stop() // the replica dies in the window
			resp.Body.Close()
			if got := workflowStatus(t, dsn, workflow); got != "PENDING" {
				t.Fatalf("the first workflow is %s after its replica died, want PENDING", got)
			}

			status, evs, newTurn := b.postTurnBody(t, s.ID, map[string]any{"message": "second answer"})
			if status != http.StatusOK || newTurn == oldTurn {
				t.Fatalf("the next turn on b: %d %s (the first was %s)", status, newTurn, oldTurn)
			}
			if end := decodeEvents(t, evs)[len(evs)-1]; end.Result != "second answer" {
				t.Fatalf("the next turn ended with %+v", end)
			}
			ctx := context.Background()
			before, err := b.srv.db.Load(ctx, s.ID)
			if err != nil || before.TurnID != newTurn || before.TurnRunning {
				t.Fatalf("the record after the next turn: %+v %v", before, err)
			}

			a2 := sharedReplica(t, dsn, "a", testSealKey, nil) // the engine takes the first workflow up
			eventually(t, "the first workflow to finish", func() bool { return workflowStatus(t, dsn, workflow) == "SUCCESS" })
			// The engine's queue runs the workflow on either replica of
			// its version, a2 or b; the one that took it up ran a served
			// turn (or none) until the workflow finished.
			eventually(t, "the replicas to run no served turn", func() bool { return runsNone(a2) && runsNone(b) })
			after, err := b.srv.db.Load(ctx, s.ID)
			if err != nil || after.TurnRunning {
				t.Fatalf("the record after the take-up: %+v %v", after, err)
			}
			if !tc.untagged {
				nextTurnUntouched(t, b, before, after, evs)
			}
			eventually(t, "the take-up's log", func() bool {
				return strings.Contains(a2.logs.String(), tc.log) || strings.Contains(b.logs.String(), tc.log)
			})
		})
	}
}

// nextTurnUntouched checks that the next turn's record (before and after
// the take-up) and stored events are as that turn left them (it streamed
// evs), none of them the first turn's.
func nextTurnUntouched(t *testing.T, b *fixture, before, after sharedstore.Record, evs []parsedEvent) {
	t.Helper()
	if !reflect.DeepEqual(after, before) {
		t.Errorf("the record after the take-up: %+v, want %+v", after, before)
	}
	// The stored events, all of them (a stream stops at the first session_end).
	got, _, err := b.srv.db.Since(context.Background(), before.TurnID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Errorf("the next turn holds %d events after the take-up, it streamed %d", len(got), len(evs))
	}
	for i, f := range got {
		switch {
		case strings.Contains(string(f), "first answer"):
			t.Errorf("event %d of the next turn is the first turn's:\n%s", i+1, f)
		case i < len(evs) && !strings.Contains(string(f), evs[i].data):
			t.Errorf("event %d of the next turn:\n%s\nit streamed %s", i+1, f, evs[i].data)
		}
	}
}

// runsNone reports whether f's server runs no served turn.
func runsNone(f *fixture) bool {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	return len(f.srv.local) == 0
}
