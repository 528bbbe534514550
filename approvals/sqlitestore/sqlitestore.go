// Package sqlitestore keeps approval requests, votes, outcomes, session
// grants and audit records in one SQLite file (modernc.org/sqlite, no cgo):
// the embedded default for one node, where pending requests survive a
// restart and `agenthost approvals approve` in another process on the same
// machine can vote. Writes take SQLite's write lock (BEGIN IMMEDIATE), so
// the quorum rules (approvals.CastVote) hold across processes. Waiters in
// the handle that settles a request wake at once; other waiters notice
// within the poll interval.
//
// The schema is versioned: the migrations embedded here are applied at
// open, and a file migrated by a newer agenthost is refused
// (migrate.ErrSchemaTooNew).
package sqlitestore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/internal/sqlstore"
	"github.com/agenthost/agenthost/internal/migrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// ErrSchemaTooNew: the file was migrated by a newer agenthost.
var ErrSchemaTooNew = migrate.ErrSchemaTooNew

// DefaultPollInterval is how often a waiter re-reads its request (votes
// from other processes are seen this way).
const DefaultPollInterval = 100 * time.Millisecond

// Prefix starts a SQLite DSN: sqlite:PATH.
const Prefix = "sqlite:"

// IsDSN reports whether dsn names a SQLite file.
func IsDSN(dsn string) bool { return strings.HasPrefix(dsn, Prefix) }

// openDB opens the file at path (created if missing) and brings its schema
// up to date.
func openDB(ctx context.Context, path string) (*sql.DB, error) {
	if path == "" {
		return nil, errors.New("sqlite: the DSN names no file (want sqlite:PATH)")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(30000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	q.Add("_pragma", "foreign_keys(ON)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open SQLite %s: %w", path, err)
	}
	if err := Migrate(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("SQLite %s: %w", path, err)
	}
	return db, nil
}

// Migrate applies the embedded migrations the file lacks, and refuses a
// file at a newer version (ErrSchemaTooNew). The migration transaction
// begins immediate: the write lock serialises migrations.
func Migrate(ctx context.Context, db *sql.DB) error {
	return sqlstore.Migrate(ctx, sqlstore.SQL(db), &dialect, migrationFS)
}

// dialect is what SQLite does differently from the shared statements
// (sqlstore): times are Unix nanoseconds; a write transaction takes the
// database's write lock at BEGIN (see openDB), so reads lock no rows; and
// waiters of other handles see a settled request when they poll.
var dialect = sqlstore.Dialect{
	Name: "SQLite",
	Time: func(t time.Time) any { return t.UnixNano() },
}

// Options configure a Store.
type Options struct {
	// PollInterval is how often waiters re-read their request; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is the SQLite approvals.Store: its methods are that interface's,
// with Close. Safe for concurrent use, and by several processes on one
// file.
type Store struct{ *core }

type core = sqlstore.Store

var _ approvals.Store = (*Store)(nil)

// Open opens (creating) the SQLite file at path and applies the
// migrations it lacks. path is the DSN without its "sqlite:" prefix.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	return &Store{sqlstore.NewStore(sqlstore.SQL(db), &dialect, sqlstore.Options{Now: opts.Now, Poll: opts.PollInterval, Close: db.Close})}, nil
}
