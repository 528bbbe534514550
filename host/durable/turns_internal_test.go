package durable

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
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
