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
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/agenthost/agenthost/approvals"
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
// file at a newer version (ErrSchemaTooNew).
func Migrate(ctx context.Context, db *sql.DB) error {
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil) // immediate: the write lock serialises migrations
	if err != nil {
		return fmt.Errorf("lock the schema for migration: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS agenthost_schema (version INTEGER NOT NULL)"); err != nil {
		return fmt.Errorf("create the schema version table: %w", err)
	}
	version := 0
	switch err := tx.QueryRowContext(ctx, "SELECT version FROM agenthost_schema").Scan(&version); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, "INSERT INTO agenthost_schema (version) VALUES (0)"); err != nil {
			return fmt.Errorf("record the schema version: %w", err)
		}
	case err != nil:
		return fmt.Errorf("read the schema version: %w", err)
	}
	pending, err := migrate.Pending(ms, version)
	if err != nil {
		return err
	}
	for _, m := range pending {
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if _, err := tx.ExecContext(ctx, "UPDATE agenthost_schema SET version = ?", m.Version); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

// Options configure a Store.
type Options struct {
	// PollInterval is how often waiters re-read their request; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is the SQLite approvals.Store. Safe for concurrent use, and by
// several processes on one file.
type Store struct {
	db   *sql.DB
	now  func() time.Time
	poll time.Duration

	mu      sync.Mutex
	waiters map[string]*waiter
	closed  bool
}

type waiter struct {
	ch   chan struct{} // closed when this handle settles the request
	refs int
}

var _ approvals.Store = (*Store)(nil)

// Open opens (creating) the SQLite file at path and applies the
// migrations it lacks. path is the DSN without its "sqlite:" prefix.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	db, err := openDB(ctx, path)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, now: opts.Now, poll: opts.PollInterval, waiters: map[string]*waiter{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	return s, nil
}

// Close closes the file.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return approvals.ErrStoreClosed
	}
	s.closed = true
	s.mu.Unlock()
	return s.db.Close()
}

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return approvals.ErrStoreClosed
	}
	return nil
}

func nanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

// Raise records req as pending.
func (s *Store) Raise(ctx context.Context, req *approvals.Request) (approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, err
	}
	a := approvals.NewApproval(req, s.now())
	doc, err := json.Marshal(a)
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("encode approval %s: %w", a.ID, err)
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO agenthost_approvals (id, state, session_id, created_at, expires_at, doc)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
		a.ID, string(a.State), a.Request.SessionID, a.Created.UnixNano(), nanos(a.Request.Deadline), string(doc))
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("store approval %s: %w", a.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return approvals.Approval{}, fmt.Errorf("%w: %s", approvals.ErrDuplicateRequest, a.ID)
	}
	return a, nil
}

func decode(id, doc string) (approvals.Approval, error) {
	var a approvals.Approval
	if err := json.Unmarshal([]byte(doc), &a); err != nil {
		return a, fmt.Errorf("decode stored approval %s: %w", id, err)
	}
	return a, nil
}

type rowScanner interface{ Scan(dest ...any) error }

func scanOne(q rowScanner, id string) (approvals.Approval, error) {
	var doc string
	if err := q.Scan(&doc); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return approvals.Approval{}, fmt.Errorf("%w: %s", approvals.ErrUnknownApproval, id)
		}
		return approvals.Approval{}, fmt.Errorf("read approval %s: %w", id, err)
	}
	return decode(id, doc)
}

// Get returns one request as seen now.
func (s *Store) Get(ctx context.Context, id string) (approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, err
	}
	a, err := scanOne(s.db.QueryRowContext(ctx, "SELECT doc FROM agenthost_approvals WHERE id = ?", id), id)
	if err != nil {
		return a, err
	}
	return a.View(s.now()), nil
}

// List returns open requests oldest first, then (with opts.Settled)
// settled ones, most recently settled first.
func (s *Store) List(ctx context.Context, opts approvals.ListOptions) ([]approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = approvals.DefaultListLimit
	}
	now := s.now()
	out, err := s.query(ctx, now, `SELECT id, doc FROM agenthost_approvals
		WHERE state = 'pending' AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id LIMIT ?`, now.UnixNano(), limit)
	if err != nil || !opts.Settled || len(out) >= limit {
		return out, err
	}
	done, err := s.query(ctx, now, `SELECT id, doc FROM agenthost_approvals
		WHERE state <> 'pending' OR expires_at <= ? ORDER BY coalesce(settled_at, expires_at) DESC, id LIMIT ?`, now.UnixNano(), limit-len(out))
	return append(out, done...), err
}

func (s *Store) query(ctx context.Context, now time.Time, q string, args ...any) ([]approvals.Approval, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	defer rows.Close()
	var out []approvals.Approval
	for rows.Next() {
		var id, doc string
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, fmt.Errorf("list approvals: %w", err)
		}
		a, err := decode(id, doc)
		if err != nil {
			return nil, err
		}
		out = append(out, a.View(now))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list approvals: %w", err)
	}
	return out, nil
}

// update reads the request inside a write transaction, applies fn, and
// writes it back if fn changed it (waking this handle's waiters when it
// became settled). fn's error is returned after the commit.
func (s *Store) update(ctx context.Context, id string, fn func(a *approvals.Approval) error) (approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see openDB)
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("update approval %s: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }()
	a, err := scanOne(tx.QueryRowContext(ctx, "SELECT doc FROM agenthost_approvals WHERE id = ?", id), id)
	if err != nil {
		return a, err
	}
	state, votes := a.State, len(a.Votes)
	ferr := fn(&a)
	if a.State == state && len(a.Votes) == votes {
		return a, ferr
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("encode approval %s: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE agenthost_approvals SET state = ?, settled_at = ?, doc = ? WHERE id = ?",
		string(a.State), nanos(a.Settled), string(doc), id); err != nil {
		return a, fmt.Errorf("update approval %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return a, fmt.Errorf("update approval %s: %w", id, err)
	}
	if state == approvals.StatePending && a.State != approvals.StatePending {
		s.wake(id)
	}
	return a, ferr
}

// Vote applies one vote (approvals.CastVote) under SQLite's write lock.
func (s *Store) Vote(ctx context.Context, id string, r approvals.Resolution) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { return approvals.CastVote(a, r, s.now()) })
}

// Expire settles an open request as expired.
func (s *Store) Expire(ctx context.Context, id string) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { a.Expire(s.now()); return nil })
}

func (s *Store) wake(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.waiters[id]; ok {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

func (s *Store) register(id string) (<-chan struct{}, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.waiters[id]
	if !ok {
		w = &waiter{ch: make(chan struct{})}
		s.waiters[id] = w
	}
	w.refs++
	return w.ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.refs--; w.refs == 0 {
			delete(s.waiters, id)
		}
	}
}

// Wait blocks until the request is settled or ctx is done. A request
// found past its deadline is settled as expired.
func (s *Store) Wait(ctx context.Context, id string) (approvals.Approval, error) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		a, done, err := s.waitOnce(ctx, id, t.C)
		if done {
			return a, err
		}
	}
}

// waitOnce reads the request once and, while it is open, waits for a wake
// up, a tick or the end of ctx; done reports that Wait should return.
func (s *Store) waitOnce(ctx context.Context, id string, tick <-chan time.Time) (approvals.Approval, bool, error) {
	woken, release := s.register(id)
	defer release()
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, true, err
	}
	a, err := scanOne(s.db.QueryRowContext(ctx, "SELECT doc FROM agenthost_approvals WHERE id = ?", id), id)
	switch {
	case err != nil:
		return a, true, err
	case a.State != approvals.StatePending:
		return a, true, nil
	case !a.Open(s.now()):
		a, err = s.Expire(ctx, id)
		return a, true, err
	}
	select {
	case <-woken:
	case <-tick:
	case <-ctx.Done():
		return approvals.Approval{}, true, ctx.Err()
	}
	return a, false, nil
}

// PutGrant stores (or replaces) a session grant.
func (s *Store) PutGrant(ctx context.Context, sessionID string, g approvals.Grant) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := json.Marshal(g)
	if err != nil {
		return fmt.Errorf("encode grant: %w", err)
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO agenthost_grants (session_id, server, tool, created_at, doc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_id, server, tool) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc`,
		sessionID, g.Server, g.Tool, g.Created.UnixNano(), string(doc))
	if err != nil {
		return fmt.Errorf("store grant: %w", err)
	}
	return nil
}

// GetGrant returns a session grant.
func (s *Store) GetGrant(ctx context.Context, sessionID, server, tool string) (approvals.Grant, bool, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Grant{}, false, err
	}
	var doc string
	err := s.db.QueryRowContext(ctx, "SELECT doc FROM agenthost_grants WHERE session_id = ? AND server = ? AND tool = ?",
		sessionID, server, tool).Scan(&doc)
	if errors.Is(err, sql.ErrNoRows) {
		return approvals.Grant{}, false, nil
	}
	if err != nil {
		return approvals.Grant{}, false, fmt.Errorf("read grant: %w", err)
	}
	var g approvals.Grant
	if err := json.Unmarshal([]byte(doc), &g); err != nil {
		return approvals.Grant{}, false, fmt.Errorf("decode grant: %w", err)
	}
	return g, true, nil
}

// RevokeGrant drops a session grant.
func (s *Store) RevokeGrant(ctx context.Context, sessionID, server, tool string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	if _, err := s.db.ExecContext(ctx, "DELETE FROM agenthost_grants WHERE session_id = ? AND server = ? AND tool = ?",
		sessionID, server, tool); err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	return nil
}
