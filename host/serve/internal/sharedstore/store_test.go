package sharedstore

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/host/serve/internal/eventlog"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// TestSharedEventsBounded: a stored turn keeps its newest 10000 events,
// as in memory: a replay from before them is refused (410, as
// ErrEventsDropped), and one from within them goes on.
func TestSharedEventsBounded(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	st, err := Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
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
