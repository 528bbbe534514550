package durable

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// A connection prepares each of the store's statements once: the appends
// run by their text through the driver's statement cache. As a
// database/sql *Stmt on the pool (whose handle keeps no idle connection)
// each append prepared its statement again and deallocated it after: two
// more round trips an append.
func TestStatementsArePreparedOncePerConnection(t *testing.T) {
	ctx := context.Background()
	rec := &prepareRecorder{seen: map[string]int{}}
	s := openTraced(t, rec).Store()
	for i := range 8 {
		if err := s.AppendAt(ctx, "s1", i, model.Message{Role: model.RoleUser, Content: fmt.Sprint("message ", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.sent(ctx, fmt.Sprint("s1.turn/call_", i)); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.prepares == 0 {
		t.Fatal("no statement was prepared: the recorder sees nothing")
	}
	for key, n := range rec.seen {
		if n > 1 {
			t.Errorf("prepared %d times on one connection: %s", n, key)
		}
	}
}

// openTraced opens an engine on a new PostgreSQL database whose pools'
// connections trace to tracer; closed with t.
func openTraced(t *testing.T, tracer pgx.QueryTracer) *Engine {
	t.Helper()
	c := pgtest.Start(t)
	testPoolConfig = func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = tracer }
	defer func() { testPoolConfig = nil }()
	e, err := Open(context.Background(), c.NewDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// prepareRecorder counts each connection's prepares of each statement.
type prepareRecorder struct {
	mu       sync.Mutex
	seen     map[string]int // backend pid and SQL
	prepares int
}

func (r *prepareRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (r *prepareRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *prepareRecorder) TracePrepareStart(ctx context.Context, conn *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prepares++
	r.seen[fmt.Sprintf("backend %d: %s", conn.PgConn().PID(), data.SQL)]++
	return ctx
}

func (r *prepareRecorder) TracePrepareEnd(context.Context, *pgx.Conn, pgx.TracePrepareEndData) {}
