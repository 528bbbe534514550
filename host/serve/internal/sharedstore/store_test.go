package sharedstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// openStore opens a store on a new database of the tests' PostgreSQL;
// closed with t.
func openStore(t *testing.T) *Store {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.Start(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	st, err := Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st
}

// TestSharedEventsBounded: a stored turn keeps its newest 10000 events,
// as in memory: a replay from before them is refused (410, as
// ErrEventsDropped), and one from within them goes on.
func TestSharedEventsBounded(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	const n = eventlog.MaxTurnEvents + 5
	for first := int64(1); first <= n; first += 1000 {
		var frames [][]byte
		for i := first; i < first+1000 && i <= n; i++ {
			frames = append(frames, []byte("event "+strconv.FormatInt(i, 10)))
		}
		if err := st.AppendEvents(ctx, "turn_x", first, frames); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.Since(ctx, "turn_x", 4); !errors.Is(err, ErrEventsDropped) {
		t.Errorf("a replay from a dropped event: %v, want ErrEventsDropped", err)
	}
	frames, last, err := st.Since(ctx, "turn_x", 5)
	if err != nil || string(frames[0]) != "event 6" || last != 5+MaxReplay {
		t.Errorf("a replay from the oldest kept: %q... to %d, %v", frames[0], last, err)
	}
	if got, _ := st.LastSeq(ctx, "turn_x"); got != n {
		t.Errorf("last event %d, want %d", got, n)
	}
}

// TestClaimReadsAndStartsTheTurnInOneStatement: Claim returns the record
// and starts the turn only when the request may start it there and then
// (its owner, no turn running, the session's value names or none), drops
// the previous turn's events with the claim, and leaves the record as it
// was otherwise; of claims at once, one wins.
func TestClaimReadsAndStartsTheTurnInOneStatement(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	for _, rec := range []Record{
		{ID: "s-plain", Owner: "o", Creator: "alice", Subject: "alice", TrustLevel: 1, ValueNames: []string{}, Created: time.Now()},
		{ID: "s-values", Owner: "o", Creator: "alice", Subject: "alice", TrustLevel: 2, ValueNames: []string{"a", "b"}, Created: time.Now()},
		{ID: "s-sealed", Owner: "o", Creator: "alice", Subject: "alice", TrustLevel: 1, ValueNames: []string{"a"}, Sealed: "x", Created: time.Now()},
	} {
		if err := st.Create(ctx, rec, 100, 100); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(id, owner, turn string, given []string) (Record, bool) {
		t.Helper()
		rec, ok, err := st.Claim(ctx, id, owner, turn, "alice", given)
		if err != nil {
			t.Fatalf("claim %s: %v", id, err)
		}
		return rec, ok
	}
	if _, _, err := st.Claim(ctx, "s-none", "o", "turn_0", "alice", nil); !errors.Is(err, ErrNoSession) {
		t.Errorf("a claim of no session: %v, want ErrNoSession", err)
	}
	for _, c := range []struct {
		id, owner string
		given     []string
	}{
		{"s-plain", "p", nil},            // another owner
		{"s-plain", "o", []string{"a"}},  // values the session has not
		{"s-values", "o", nil},           // its values not given
		{"s-values", "o", []string{"a"}}, // not all of them
		{"s-sealed", "o", nil},           // sealed: only the caller opens them
	} {
		if rec, ok := claim(c.id, c.owner, "turn_no", c.given); ok || rec.TurnRunning || rec.TurnID != "" {
			t.Errorf("claim %s as %s with %v: claimed %v, record %+v; want the record as it was", c.id, c.owner, c.given, ok, rec)
		}
	}
	if rec, _ := st.Load(ctx, "s-plain"); rec.TurnID != "" || rec.TurnRunning {
		t.Fatalf("a refused claim changed the record: %+v", rec)
	}

	rec, ok := claim("s-values", "o", "turn_1", []string{"a", "b"})
	if !ok || rec.TrustLevel != 2 || len(rec.ValueNames) != 2 || rec.TurnID != "" {
		t.Fatalf("claim with the session's values: %v, %+v", ok, rec)
	}
	if _, ok := claim("s-values", "o", "turn_2", []string{"a", "b"}); ok {
		t.Fatal("a second claim while the turn runs was granted")
	}
	if err := st.AppendEvents(ctx, "turn_1", 1, [][]byte{[]byte("one"), []byte("two")}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndTurn(ctx, "s-values", "turn_1", 3, []byte("end")); err != nil {
		t.Fatal(err)
	}
	rec, ok = claim("s-values", "o", "turn_2", []string{"a", "b"})
	if !ok || rec.TurnID != "turn_1" || rec.TurnRunning {
		t.Fatalf("claim after the turn ended: %v, %+v (want the record before the claim)", ok, rec)
	}
	if n, _ := st.LastSeq(ctx, "turn_1"); n != 0 {
		t.Errorf("the previous turn keeps %d events after the claim, want none", n)
	}
	if now, _ := st.Load(ctx, "s-values"); now.TurnID != "turn_2" || now.TurnBy != "alice" || !now.TurnRunning {
		t.Errorf("after the claim: %+v", now)
	}

	var wg sync.WaitGroup
	var won atomic.Int32
	for i := range 8 {
		wg.Go(func() {
			if _, ok, err := st.Claim(ctx, "s-plain", "o", "turn_p"+strconv.Itoa(i), "alice", nil); err != nil {
				t.Error(err)
			} else if ok {
				won.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 1 {
		t.Errorf("%d of 8 claims at once won, want 1", won.Load())
	}
}
