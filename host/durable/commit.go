package durable

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// testPoolConfig, when set (by tests), adjusts the engine's pool
// configuration before the pool is made.
var testPoolConfig func(*pgxpool.Config)

// Which writes wait for the WAL flush (PostgreSQL).
//
// Every write of the engine's pool is a flushed commit (synchronous_commit
// on), except the checkpoints of the steps that nothing outside the
// database depends on until a later flushed write of the same turn: a
// step's checkpoint is committed with synchronous_commit off when
// lazyStep(name) says so. PostgreSQL writes the WAL in order, so a later
// flushed commit (the next model step's checkpoint, the send ledger's row,
// the turn's outcome) flushes every lazy checkpoint before it; a lazy
// checkpoint can be lost only by a crash of the database server (not of
// agenthost) within the WAL writer's delay (at most three times
// wal_writer_delay, 600 ms by default) and before any such later write.
//
//   - "tool" (a call's outcome): the call's send was counted by the send
//     ledger, flushed, before the request left. A lost outcome makes the
//     replayed call one "recorded as sent but not completed": sent again
//     only when the tool is idempotent by a trusted source, otherwise
//     reported as possibly run. An approved call is never sent twice.
//   - "load" (the conversation's length when the turn began): its output
//     is computed again from the same rows when lost (whatever the turn
//     appended after it was lost with it, or was flushed with it).
//
// Flushed: "model" (the model's answer decides the calls, their decision
// records reach the audit log and their approval requests the approvals
// store, which may be other databases or a file: a replay must find the
// same answer, never ask again), the send ledger (before the request
// leaves), the session store outside a turn, and the engine's own writes
// (a turn's start, its outcome, recovery and queues).
//
// A turn's appends to its conversation (and the session's line, written
// with the first) are lazy, through the lazy pool (no mode switch): each
// is followed, before anything outside the database depends on it, by a
// flushed write of the same turn (the user's message by the first model
// answer's checkpoint, an answer's message by the send ledger's count of
// its first call or by the turn's outcome, a call's result by the next
// answer's checkpoint), and a replay appends again, at its position,
// whatever was lost (the conversation is a SequencedHistory).
func lazyStep(name string) bool { return name == "tool" || name == "load" }

// turnKey marks the context of a turn's run (turnWorkflow) with its
// *turnRun: the store's appends under it are lazy (above).
type turnKey struct{}

// turnRun is a turn's run as the store's appends see it: the append of
// the turn's last message removes the turn's row from the index of
// unfinished turns in its own statement (Store.append), and says so here.
type turnRun struct {
	id       string
	unlisted atomic.Bool
}

// inTurn is ctx with a turn's appends lazy; turnOf returns the run (nil:
// not in a turn's run).
func inTurn(ctx context.Context, run *turnRun) context.Context {
	return context.WithValue(ctx, turnKey{}, run)
}

func turnOf(ctx context.Context) *turnRun { v, _ := ctx.Value(turnKey{}).(*turnRun); return v }

// commitKey is the context key of the mode the pool's commits take: a
// bool (true: lazy, not waiting for the flush; false: flushed), or a
// step's *stepCommit. No value: flushed.
type commitKey struct{}

// lazyCommits is ctx with the pool's commits not waiting for the flush;
// flushedCommits undoes it (the work inside a lazy step: its send ledger
// row, its appends).
func lazyCommits(ctx context.Context) context.Context {
	return context.WithValue(ctx, commitKey{}, true)
}

func flushedCommits(ctx context.Context) context.Context {
	switch v := ctx.Value(commitKey{}).(type) {
	case nil:
		return ctx
	case bool:
		if !v {
			return ctx
		}
	}
	return context.WithValue(ctx, commitKey{}, false)
}

// anyCommits is ctx for reads: the pool's hook leaves a connection's mode
// as it is (a read commits nothing).
func anyCommits(ctx context.Context) context.Context {
	return context.WithValue(ctx, commitKey{}, anyCommit{})
}

type anyCommit struct{}

// stepCommit is the mode of a step's own statements: the engine looks its
// checkpoint up (a read: any mode) before the step's work, and records it
// (a write: lazy or flushed, lazyStep) after; recording says that the
// work is over. The work itself runs under flushedCommits.
type stepCommit struct {
	lazy      bool
	recording atomic.Bool
}

// stepContext is ctx for the engine's statements of step name.
func stepContext(ctx context.Context, name string) (context.Context, *stepCommit) {
	m := &stepCommit{lazy: lazyStep(name)}
	return context.WithValue(ctx, commitKey{}, m), m
}

// commitMode is what ctx asks of a connection's synchronous_commit: lazy
// (off) or not (on), or any (keep the connection's).
func commitMode(ctx context.Context) (lazy, any bool) {
	switch v := ctx.Value(commitKey{}).(type) {
	case bool:
		return v, false
	case anyCommit:
		return false, true
	case *stepCommit:
		if !v.recording.Load() {
			return false, true
		}
		return v.lazy, false
	}
	return false, false
}

// openLazyPool is a small pool of cfg's database whose connections commit
// with synchronous_commit off from their start (no round trip to set it):
// the writes that are always lazy go through it, and the engine's pool
// switches modes only for the steps' checkpoints.
func openLazyPool(ctx context.Context, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	lcfg := cfg.Copy()
	lcfg.PrepareConn = nil
	lcfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	lcfg.MinConns = 0 // as many as the engine's pool at most: a turn's appends go through it
	lcfg.AfterConnect = func(_ context.Context, conn *pgx.Conn) error {
		conn.PgConn().CustomData()[syncCommitData] = true
		return nil
	}
	return pgxpool.NewWithConfig(ctx, lcfg)
}

// syncCommitData is the key, in a connection's CustomData, of its
// synchronous_commit as this package last set it (absent: the server's
// default, on).
const syncCommitData = "agenthost.synchronous_commit"

// prepareCommitMode is the pool's PrepareConn: it sets the connection's
// synchronous_commit to what the acquiring context asks (off under
// lazyCommits, else on; a read keeps it), with a round trip only when it
// changes.
func prepareCommitMode(ctx context.Context, conn *pgx.Conn) (bool, error) {
	lazy, anyMode := commitMode(ctx)
	data := conn.PgConn().CustomData()
	cur, _ := data[syncCommitData].(bool) // false: on
	if anyMode || cur == lazy {
		return true, nil
	}
	q := "SET synchronous_commit TO on"
	if lazy {
		q = "SET synchronous_commit TO off"
	}
	if _, err := conn.Exec(ctx, q); err != nil {
		// The connection's mode is unknown now: drop it.
		return false, fmt.Errorf("durable: set the commit mode: %w", err)
	}
	data[syncCommitData] = lazy
	return true, nil
}
