// Package pgstore keeps approval requests, votes, outcomes, session grants
// and audit records in PostgreSQL, shared by every replica of a chat
// backend (jackc/pgx). A request raised on one replica can be listed and
// voted on from any other; a replica waiting on a request wakes through
// LISTEN/NOTIFY when another settles it (with a slow poll as a safety net
// for a lost connection). Votes lock the request's row, so quorum rules
// (approvals.CastVote) hold under concurrent votes from many replicas.
//
// The schema is versioned: the migrations embedded here are applied at
// open, and a database migrated by a newer agenthost is refused
// (migrate.ErrSchemaTooNew).
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/internal/sqlstore"
	"github.com/agenthost/agenthost/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaTooNew: the database was migrated by a newer agenthost.
var ErrSchemaTooNew = migrate.ErrSchemaTooNew

// notifyChannel is the LISTEN/NOTIFY channel; the payload is the id of a
// request that was settled.
const notifyChannel = "agenthost_approvals"

// DefaultPollInterval is how often a waiter re-reads its request when no
// notification came (a safety net, not the wake-up path).
const DefaultPollInterval = 2 * time.Second

// dialect is what PostgreSQL does differently from the shared statements
// (sqlstore): row locks, an advisory lock around migrations (key "agnt"),
// NOTIFY on a settled request, and a batch of audit records appended in
// one statement.
var dialect = sqlstore.Dialect{
	Name:          "PostgreSQL",
	Numbered:      true,
	Time:          func(t time.Time) any { return t.UTC() },
	RowLocks:      true,
	MigrationLock: "SELECT pg_advisory_xact_lock(1634168436)",
	Notify:        "SELECT pg_notify('" + notifyChannel + "', $1)",
	AppendAudit:   appendAudit,
}

// IsDSN reports whether dsn names a PostgreSQL database.
func IsDSN(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// openPool connects and brings the schema up to date.
func openPool(ctx context.Context, dsn string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// pgx's parse errors can quote the DSN, password included.
		return nil, errors.New("parse the PostgreSQL DSN: not a valid postgres:// URL")
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	if err := Migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return pool, nil
}

// Migrate applies the embedded migrations the database lacks, under an
// advisory lock, and refuses a database at a newer version
// (ErrSchemaTooNew).
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return sqlstore.Migrate(ctx, pgDB{pool}, &dialect, migrationFS)
}

// Options configure a Store.
type Options struct {
	// PollInterval is the waiters' safety-net poll; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is the PostgreSQL approvals.Store: its methods are that
// interface's, with Close. Safe for concurrent use.
type Store struct {
	*core
	pool     *pgxpool.Pool
	waiters  *sqlstore.Waiters
	cancel   context.CancelFunc
	finished chan struct{}
}

type core = sqlstore.Store

var _ approvals.Store = (*Store)(nil)

// Open connects to the database at dsn (postgres://...), applies the
// migrations it lacks and starts listening for settled requests.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	s := &Store{pool: pool, waiters: new(sqlstore.Waiters), finished: make(chan struct{})}
	s.core = sqlstore.NewStore(pgDB{pool}, &dialect, sqlstore.Options{Now: opts.Now, Poll: opts.PollInterval, Close: s.close, Waiters: s.waiters})
	lctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	ready := make(chan struct{})
	go s.listen(lctx, ready)
	select {
	case <-ready:
	case <-ctx.Done():
		_ = s.Close()
		return nil, ctx.Err()
	}
	return s, nil
}

// listen owns the LISTEN connection: it wakes the waiters of each settled
// id, and reconnects (waking every waiter to re-read) when the connection
// is lost.
func (s *Store) listen(ctx context.Context, ready chan struct{}) {
	defer close(s.finished)
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		conn, err := s.pool.Acquire(ctx)
		if err == nil {
			_, err = conn.Exec(ctx, "LISTEN "+notifyChannel)
		}
		if ready != nil {
			close(ready) // even on failure: waiters poll until a connection works
			ready = nil
		}
		if err == nil {
			backoff = 50 * time.Millisecond
			s.waiters.WakeAll() // anything settled while nobody listened
			for {
				n, werr := conn.Conn().WaitForNotification(ctx)
				if werr != nil {
					break
				}
				s.waiters.Wake(n.Payload)
			}
		}
		if conn != nil {
			// The connection may hold a LISTEN: do not return it to the
			// pool for reuse.
			_ = conn.Hijack().Close(context.Background())
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// close stops listening and closes the pool (Close, once).
func (s *Store) close() error {
	s.cancel()
	<-s.finished
	s.pool.Close()
	return nil
}

// pgDB adapts a pool to sqlstore.DB.
type pgDB struct{ pool *pgxpool.Pool }

func (d pgDB) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := d.pool.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (d pgDB) Scan(ctx context.Context, dest []any, sql string, args ...any) error {
	return d.pool.QueryRow(ctx, sql, args...).Scan(dest...)
}

func (d pgDB) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return d.pool.Query(ctx, sql, args...)
}

func (d pgDB) Begin(ctx context.Context) (sqlstore.Tx, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	return &pgTx{conn: conn}, nil
}

// pgTx is a transaction on one pooled connection, pipelined: BEGIN goes
// with a first Scan, and Commit's statements with COMMIT, each in one
// round trip (a vote is two: BEGIN and the locking read, then the write,
// the notification and COMMIT).
type pgTx struct {
	conn             *pgxpool.Conn
	begun, committed bool
}

// send runs stmts (and COMMIT with commit) in one round trip, after BEGIN
// if the transaction has not begun; dest, when set, receives the row of
// the last statement.
func (t *pgTx) send(ctx context.Context, stmts []sqlstore.Stmt, commit bool, dest []any) error {
	b := &pgx.Batch{}
	if !t.begun {
		b.Queue("BEGIN")
		t.begun = true
	}
	for _, st := range stmts {
		b.Queue(st.SQL, st.Args...)
	}
	if commit {
		b.Queue("COMMIT")
	}
	br := t.conn.SendBatch(ctx, b)
	var err error
	for i := range b.Len() {
		if dest != nil && i == b.Len()-1 {
			err = br.QueryRow().Scan(dest...)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// Exec runs one statement on its own (a migration's script is several).
func (t *pgTx) Exec(ctx context.Context, sql string, args ...any) error {
	if !t.begun {
		if _, err := t.conn.Exec(ctx, "BEGIN"); err != nil {
			return err
		}
		t.begun = true
	}
	_, err := t.conn.Exec(ctx, sql, args...)
	return err
}

func (t *pgTx) Scan(ctx context.Context, dest []any, sql string, args ...any) error {
	return t.send(ctx, []sqlstore.Stmt{{SQL: sql, Args: args}}, false, dest)
}

func (t *pgTx) Commit(ctx context.Context, stmts ...sqlstore.Stmt) error {
	err := t.send(ctx, stmts, true, nil)
	t.committed = err == nil
	return err
}

// Rollback ends a transaction that was begun and not committed, and
// releases the connection (one left inside a transaction by a failure is
// closed by the pool rather than reused).
func (t *pgTx) Rollback(ctx context.Context) {
	if t.begun && !t.committed {
		_, _ = t.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	t.conn.Release()
}
