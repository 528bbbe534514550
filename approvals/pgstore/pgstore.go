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
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/agenthost/approvals"
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

// migrationLock is the advisory lock key that serialises migrations of
// replicas starting at once.
const migrationLock = 0x61676e74 // "agnt"

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
	ms, err := migrate.Load(migrationFS, "migrations")
	if err != nil {
		return err
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationLock)); err != nil {
		return fmt.Errorf("lock the schema for migration: %w", err)
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS agenthost_schema (version integer NOT NULL)"); err != nil {
		return fmt.Errorf("create the schema version table: %w", err)
	}
	version := 0
	switch err := tx.QueryRow(ctx, "SELECT version FROM agenthost_schema").Scan(&version); {
	case errors.Is(err, pgx.ErrNoRows):
		if _, err := tx.Exec(ctx, "INSERT INTO agenthost_schema (version) VALUES (0)"); err != nil {
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
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return fmt.Errorf("apply migration %s: %w", m.Name, err)
		}
		if _, err := tx.Exec(ctx, "UPDATE agenthost_schema SET version = $1", m.Version); err != nil {
			return fmt.Errorf("record migration %s: %w", m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit migrations: %w", err)
	}
	return nil
}

// Options configure a Store.
type Options struct {
	// PollInterval is the waiters' safety-net poll; 0 means
	// DefaultPollInterval.
	PollInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Store is the PostgreSQL approvals.Store. Safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	now  func() time.Time
	poll time.Duration

	mu      sync.Mutex
	waiters map[string]*waiter
	closed  bool

	cancel   context.CancelFunc
	finished chan struct{}
}

type waiter struct {
	ch   chan struct{} // closed on a notification for the id
	refs int
}

var _ approvals.Store = (*Store)(nil)

// Open connects to the database at dsn (postgres://...), applies the
// migrations it lacks and starts listening for settled requests.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	pool, err := openPool(ctx, dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{pool: pool, now: opts.Now, poll: opts.PollInterval, waiters: map[string]*waiter{}, finished: make(chan struct{})}
	if s.now == nil {
		s.now = time.Now
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
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
			s.wakeAll() // anything settled while nobody listened
			for {
				n, werr := conn.Conn().WaitForNotification(ctx)
				if werr != nil {
					break
				}
				s.wake(n.Payload)
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

func (s *Store) wake(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.waiters[id]; ok {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

func (s *Store) wakeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.waiters {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// Close stops listening and closes the pool.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return approvals.ErrStoreClosed
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	<-s.finished
	s.pool.Close()
	return nil
}

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return approvals.ErrStoreClosed
	}
	return nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
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
	tag, err := s.pool.Exec(ctx, `INSERT INTO agenthost_approvals (id, state, session_id, created_at, expires_at, doc)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING`,
		a.ID, string(a.State), a.Request.SessionID, a.Created, nullTime(a.Request.Deadline), string(doc))
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("store approval %s: %w", a.ID, err)
	}
	if tag.RowsAffected() == 0 {
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

func (s *Store) get(ctx context.Context, q pgx.Row, id string) (approvals.Approval, error) {
	var doc string
	if err := q.Scan(&doc); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
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
	a, err := s.get(ctx, s.pool.QueryRow(ctx, "SELECT doc FROM agenthost_approvals WHERE id = $1", id), id)
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
	now := s.now().UTC()
	out, err := s.query(ctx, now, `SELECT id, doc FROM agenthost_approvals
		WHERE state = 'pending' AND (expires_at IS NULL OR expires_at > $1) ORDER BY created_at, id LIMIT $2`, now, limit)
	if err != nil || !opts.Settled || len(out) >= limit {
		return out, err
	}
	done, err := s.query(ctx, now, `SELECT id, doc FROM agenthost_approvals
		WHERE state <> 'pending' OR expires_at <= $1 ORDER BY coalesce(settled_at, expires_at) DESC, id LIMIT $2`, now, limit-len(out))
	return append(out, done...), err
}

func (s *Store) query(ctx context.Context, now time.Time, sql string, args ...any) ([]approvals.Approval, error) {
	rows, err := s.pool.Query(ctx, sql, args...)
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

// update reads the request under a row lock, applies fn, and writes the
// request back (notifying waiters when it became settled) if fn changed
// it: two round trips, BEGIN with the locking read, then the write, the
// notification and COMMIT, pipelined. fn's error is returned after the
// commit, with the request as it stands.
func (s *Store) update(ctx context.Context, id string, fn func(a *approvals.Approval) error) (approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("update approval %s: %w", id, err)
	}
	// A connection left inside a transaction by a failure is closed by the
	// pool on release rather than reused.
	defer conn.Release()
	done := false
	defer func() {
		if !done {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	read := &pgx.Batch{}
	read.Queue("BEGIN")
	read.Queue("SELECT doc FROM agenthost_approvals WHERE id = $1 FOR UPDATE", id)
	br := conn.SendBatch(ctx, read)
	var a approvals.Approval
	_, err = br.Exec()
	if err == nil {
		a, err = s.get(ctx, br.QueryRow(), id)
	}
	if cerr := br.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("read approval %s: %w", id, cerr)
	}
	if err != nil {
		return a, err
	}
	state, votes := a.State, len(a.Votes)
	ferr := fn(&a)
	if a.State == state && len(a.Votes) == votes {
		return a, ferr // the deferred ROLLBACK ends the read
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("encode approval %s: %w", id, err)
	}
	write := &pgx.Batch{}
	write.Queue("UPDATE agenthost_approvals SET state = $2, settled_at = $3, doc = $4 WHERE id = $1",
		id, string(a.State), nullTime(a.Settled), string(doc))
	if state == approvals.StatePending && a.State != approvals.StatePending {
		write.Queue("SELECT pg_notify($1, $2)", notifyChannel, id)
	}
	write.Queue("COMMIT")
	br = conn.SendBatch(ctx, write)
	for range write.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return a, fmt.Errorf("update approval %s: %w", id, err)
	}
	done = true
	return a, ferr
}

// Vote applies one vote (approvals.CastVote) under the request's row lock.
func (s *Store) Vote(ctx context.Context, id string, r approvals.Resolution) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { return approvals.CastVote(a, r, s.now()) })
}

// Expire settles an open request as expired.
func (s *Store) Expire(ctx context.Context, id string) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { a.Expire(s.now()); return nil })
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

// Wait blocks until the request is settled (on any replica) or ctx is
// done. A request found past its deadline is settled as expired.
func (s *Store) Wait(ctx context.Context, id string) (approvals.Approval, error) {
	var tick <-chan time.Time
	for {
		woken, done := s.register(id)
		if err := s.checkOpen(); err != nil {
			done()
			return approvals.Approval{}, err
		}
		a, err := s.get(ctx, s.pool.QueryRow(ctx, "SELECT doc FROM agenthost_approvals WHERE id = $1", id), id)
		switch {
		case err != nil:
			done()
			return a, err
		case a.State != approvals.StatePending:
			done()
			return a, nil
		case !a.Open(s.now()):
			done()
			return s.Expire(ctx, id)
		}
		if tick == nil {
			t := time.NewTicker(s.poll)
			defer t.Stop()
			tick = t.C
		}
		select {
		case <-woken:
		case <-tick:
		case <-ctx.Done():
			done()
			return approvals.Approval{}, ctx.Err()
		}
		done()
	}
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
	_, err = s.pool.Exec(ctx, `INSERT INTO agenthost_grants (session_id, server, tool, created_at, doc) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (session_id, server, tool) DO UPDATE SET created_at = EXCLUDED.created_at, doc = EXCLUDED.doc`,
		sessionID, g.Server, g.Tool, g.Created.UTC(), string(doc))
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
	err := s.pool.QueryRow(ctx, "SELECT doc FROM agenthost_grants WHERE session_id = $1 AND server = $2 AND tool = $3",
		sessionID, server, tool).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
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
	if _, err := s.pool.Exec(ctx, "DELETE FROM agenthost_grants WHERE session_id = $1 AND server = $2 AND tool = $3",
		sessionID, server, tool); err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	return nil
}
