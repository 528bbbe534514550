package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// openWaiting opens the engine at dsn with turns that checkpoint a step
// and then wait for the engine to stop; running is told of each.
func openWaiting(t *testing.T, dsn, executor string, running chan<- string) *Engine {
	t.Helper()
	e, err := Open(context.Background(), dsn, Options{ExecutorID: executor})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(func(ctx context.Context, steps host.Steps, _ host.TurnRecord) error {
		if _, _, err := steps.Step(ctx, "load", func(context.Context) (json.RawMessage, error) { return json.RawMessage("0"), nil }); err != nil {
			return err
		}
		running <- steps.TurnID()
		<-ctx.Done()
		return ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

// A session's unfinished turns come from the adapter's index, confirmed by
// the engine: a turn the index lacks (a database written before it) is
// indexed when the engine starts, a row whose turn ended is not listed
// and is dropped, and a session whose id begins another's sees only its
// own.
func TestPendingTurnsIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "durable.db")
	dsn := "sqlite:" + path
	running := make(chan string, 4)
	e := openWaiting(t, dsn, "turns-test", running)
	const s1, s10 = "s1", "s10"
	t1, t10 := s1+".0000000000000001.00000001", s10+".0000000000000002.00000002"
	var wg sync.WaitGroup
	for _, tt := range []struct{ session, id string }{{s1, t1}, {s10, t10}} {
		wg.Go(func() { _ = e.RunTurn(ctx, tt.id, host.TurnRecord{SessionID: tt.session}) })
		select {
		case <-running:
		case <-time.After(time.Minute):
			t.Fatal("the turn did not start")
		}
	}
	for _, tt := range []struct {
		session string
		want    []string
	}{{s1, []string{t1}}, {s10, []string{t10}}, {"s", nil}} {
		if got, err := e.PendingTurns(ctx, tt.session); err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("PendingTurns(%s) = %v, %v; want %v", tt.session, got, err, tt.want)
		}
	}
	// A stopped engine: the turns stay unfinished. Forget the index, as a
	// database written before it has none, and note a turn that ended.
	_ = e.Close()
	wg.Wait()
	db, err := openSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM agenthost_turns`); err != nil {
		t.Fatal(err)
	}
	const ended = s1 + ".0000000000000000.00000000" // no such workflow
	if _, err := db.Exec(`INSERT INTO agenthost_turns (turn_id, session_id) VALUES (?, ?)`, ended, s1); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	e = openWaiting(t, dsn, "turns-test", running)
	if got, err := e.PendingTurns(ctx, s1); err != nil || !slices.Equal(got, []string{t1}) {
		t.Errorf("after a restart without the index: PendingTurns(%s) = %v, %v; want [%s]", s1, got, err, t1)
	}
	if ids, err := e.store.candidateTurns(ctx, s1); err != nil || slices.Contains(ids, ended) {
		t.Errorf("the row of a turn the engine does not hold unfinished is kept: %v, %v", ids, err)
	}
	_ = e.Close()
	// Another executor runs none of them: the engine confirms them.
	e = openWaiting(t, dsn, "another", running)
	defer e.Close()
	if got, err := e.PendingTurns(ctx, s10); err != nil || !slices.Equal(got, []string{t10}) {
		t.Errorf("on another executor: PendingTurns(%s) = %v, %v; want [%s]", s10, got, err, t10)
	}
}

// A turn's answer, its last message, takes the turn out of the index of
// unfinished turns in the statement that appends it (PostgreSQL): the
// turn's row stays through its other appends, is gone once the answer is
// stored, and no statement of its own removes it after. Until the
// engine has the turn's outcome the turn is still listed, as one running
// here, so that a process taking it up after a stop between the two
// resumes it to its end.
func TestTurnsAnswerTakesItOutOfTheIndex(t *testing.T) {
	ctx := context.Background()
	rec := &dropRecorder{}
	e := openTraced(t, rec) // prepare_internal_test.go
	const session, id = "s", "s.0000000000000001.00000001"
	listed := func(want bool, when string) {
		t.Helper()
		ids, err := e.store.candidateTurns(ctx, session)
		if err != nil || slices.Contains(ids, id) != want {
			t.Errorf("%s: the index holds %v (%v); want the turn listed: %v", when, ids, err, want)
		}
		if got, err := e.PendingTurns(ctx, session); err != nil || !slices.Equal(got, []string{id}) {
			t.Errorf("%s: PendingTurns = %v, %v; want [%s]", when, got, err, id)
		}
	}
	call := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "db__lookup", Arguments: `{}`}}}
	if err := e.Start(func(ctx context.Context, _ host.Steps, _ host.TurnRecord) error {
		for i, m := range []model.Message{{Role: model.RoleUser, Content: "look it up"}, call, {Role: model.RoleTool, ToolCallID: "c1", Content: "found"}} {
			if err := e.Store().AppendAt(ctx, session, i, m); err != nil {
				return err
			}
			listed(true, "after the append of a "+string(m.Role)+" message")
		}
		if err := e.Store().AppendAt(ctx, session, 3, model.Message{Role: model.RoleAssistant, Content: "the answer"}); err != nil {
			return err
		}
		listed(false, "after the answer's append")
		rec.mu.Lock()
		rec.drops = 0
		rec.mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.RunTurn(ctx, id, host.TurnRecord{SessionID: session}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.PendingTurns(ctx, session); err != nil || len(got) != 0 {
		t.Errorf("after the turn: PendingTurns = %v, %v; want none", got, err)
	}
	if msgs, err := e.Store().Load(ctx, session); err != nil || len(msgs) != 4 {
		t.Errorf("the conversation: %d messages, %v; want 4", len(msgs), err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.drops != 0 {
		t.Errorf("%d statements removed the turn's row after its answer's append, want none", rec.drops)
	}
}

// dropRecorder counts the statements that only remove index rows.
type dropRecorder struct {
	mu    sync.Mutex
	drops int
}

func (r *dropRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(data.SQL, "DELETE FROM agenthost_turns") {
		r.mu.Lock()
		r.drops++
		r.mu.Unlock()
	}
	return ctx
}

func (r *dropRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// An append of many messages at once (the results of many calls) is one
// statement on both databases, its placeholders past $9 included.
func TestAppendOfManyMessages(t *testing.T) {
	ctx := context.Background()
	for _, b := range []struct{ name, dsn string }{{"sqlite", "sqlite:" + filepath.Join(t.TempDir(), "durable.db")}, {"postgres", pgtest.Start(t).NewDatabase(t)}} {
		t.Run(b.name, func(t *testing.T) {
			e, err := Open(ctx, b.dsn, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			msgs := []model.Message{{Role: model.RoleUser, Content: "many"}}
			for i := range 40 {
				msgs = append(msgs, model.Message{Role: model.RoleTool, ToolCallID: fmt.Sprint("c", i), Content: fmt.Sprint("result ", i)})
			}
			if err := e.Store().AppendAt(ctx, "s", 0, msgs[:1]...); err != nil {
				t.Fatal(err)
			}
			if err := e.Store().AppendAt(ctx, "s", 1, msgs[1:]...); err != nil {
				t.Fatal(err)
			}
			got, err := e.Store().Load(ctx, "s")
			if err != nil || len(got) != len(msgs) || got[40].Content != "result 39" {
				t.Fatalf("loaded %d messages, %v; want %d", len(got), err, len(msgs))
			}
		})
	}
}
