package durable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos/internals"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Executor leases (PostgreSQL): each process of many that share one
// database heartbeats a row of agenthost_executors; a survivor takes over
// the unfinished turns of an executor whose row has not been renewed for
// the lease's timeout. Taking over is the engine's own recovery
// (RecoverPendingWorkflows, what a process does for itself at start): the
// executor's pending turns go back to the engine's internal queue, and the
// queue runner of whichever process dequeues one first runs it there (it
// becomes that process's). It happens once per expiry: under the row's
// lock (FOR UPDATE SKIP LOCKED, so two survivors never take over the same
// executor together), and the engine moves each turn from pending to
// queued once whoever asks. The row is deleted with the take-over; an
// executor that comes back writes it again.

// LeaseOptions configure KeepLease.
type LeaseOptions struct {
	// Every is how often the lease is renewed and expired leases are
	// looked for (default 5 s).
	Every time.Duration
	// Timeout is how long a lease lasts unrenewed before a survivor takes
	// its executor's turns over (default 30 s, at least twice Every).
	Timeout time.Duration
	// OnTakeOver, when set, is told of each executor taken over and the
	// number of its turns queued again.
	OnTakeOver func(executorID string, turns int)
}

// ErrNoLease is returned by KeepLease on SQLite: one node, nobody to take
// over from.
var ErrNoLease = errors.New("durable: leases need PostgreSQL")

const leaseSchema = `CREATE TABLE IF NOT EXISTS agenthost_executors (
	executor_id  TEXT PRIMARY KEY,
	app_version  TEXT NOT NULL,
	heartbeat_ms BIGINT NOT NULL
)`

// ExecutorID is the engine's executor identity (Options.ExecutorID, or
// "local").
func (e *Engine) ExecutorID() string { return e.executor }

// Pool is the engine's PostgreSQL pool (nil on SQLite), for the tables of
// a program built on the engine (agenthost serve's sessions and events).
func (e *Engine) Pool() *pgxpool.Pool { return e.pool }

// KeepLease renews this executor's lease until ctx ends, and takes over
// the turns of executors whose lease expired. It renews once before it
// returns the first time (an error then is returned at once); later
// errors are retried at the next tick.
func (e *Engine) KeepLease(ctx context.Context, opts LeaseOptions) error {
	if e.pool == nil {
		return ErrNoLease
	}
	if opts.Every <= 0 {
		opts.Every = 5 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	opts.Timeout = max(opts.Timeout, 2*opts.Every)
	if _, err := e.pool.Exec(ctx, leaseSchema); err != nil {
		return fmt.Errorf("durable: create the lease table: %w", err)
	}
	if err := e.renew(ctx); err != nil {
		return err
	}
	t := time.NewTicker(opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := e.renew(ctx); err != nil {
			continue
		}
		_ = e.takeOverExpired(ctx, opts)
	}
}

func (e *Engine) renew(ctx context.Context) error {
	_, err := e.pool.Exec(ctx, `INSERT INTO agenthost_executors (executor_id, app_version, heartbeat_ms) VALUES ($1, $2, $3)
		ON CONFLICT (executor_id) DO UPDATE SET app_version = excluded.app_version, heartbeat_ms = excluded.heartbeat_ms`,
		e.executor, e.version, nowMs())
	if err != nil {
		return fmt.Errorf("durable: renew the lease: %w", err)
	}
	return nil
}

// takeOverExpired takes over each executor of this version whose lease
// expired, one transaction (and row lock) each.
func (e *Engine) takeOverExpired(ctx context.Context, opts LeaseOptions) error {
	rt, err := internals.RuntimeOf(e.dbos)
	if err != nil {
		return err
	}
	for {
		taken, err := e.takeOverOne(ctx, rt, opts)
		if err != nil || !taken {
			return err
		}
	}
}

func (e *Engine) takeOverOne(ctx context.Context, rt internals.Runtime, opts LeaseOptions) (bool, error) {
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var id string
	err = tx.QueryRow(ctx, `SELECT executor_id FROM agenthost_executors
		WHERE heartbeat_ms < $1 AND executor_id <> $2 AND app_version = $3
		ORDER BY heartbeat_ms LIMIT 1 FOR UPDATE SKIP LOCKED`,
		nowMs()-opts.Timeout.Milliseconds(), e.executor, e.version).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	handles, err := rt.RecoverPendingWorkflows([]string{id})
	if err != nil {
		return false, fmt.Errorf("durable: take over executor %s: %w", id, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM agenthost_executors WHERE executor_id = $1`, id); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	if opts.OnTakeOver != nil {
		opts.OnTakeOver(id, len(handles))
	}
	return true, nil
}
