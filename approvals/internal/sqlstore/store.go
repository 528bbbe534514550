package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals"
)

const (
	insertApproval = `INSERT INTO agenthost_approvals (id, state, session_id, created_at, expires_at, doc)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`
	selectApproval = "SELECT doc FROM agenthost_approvals WHERE id = ?"
	listOpen       = `SELECT id, doc FROM agenthost_approvals
		WHERE state = 'pending' AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id LIMIT ?`
	listSettled = `SELECT id, doc FROM agenthost_approvals
		WHERE state <> 'pending' OR expires_at <= ? ORDER BY coalesce(settled_at, expires_at) DESC, id LIMIT ?`
	updateApproval = "UPDATE agenthost_approvals SET state = ?, settled_at = ?, doc = ? WHERE id = ?"
	putGrant       = `INSERT INTO agenthost_grants (session_id, server, tool, created_at, doc) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (session_id, server, tool) DO UPDATE SET created_at = excluded.created_at, doc = excluded.doc`
	selectGrant = "SELECT doc FROM agenthost_grants WHERE session_id = ? AND server = ? AND tool = ?"
	deleteGrant = "DELETE FROM agenthost_grants WHERE session_id = ? AND server = ? AND tool = ?"
)

// Options configure a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Poll is how often a waiter re-reads its request.
	Poll time.Duration
	// Close closes the database handle (and anything of the driver's
	// store, such as a listener) when the Store closes.
	Close func() error
	// Waiters, when set, are the store's waiters, for the driver's store
	// to wake on its database's notifications; nil means new ones.
	Waiters *Waiters
}

// Store is an approvals.Store over db. Safe for concurrent use.
type Store struct {
	db      DB
	d       *Dialect
	now     func() time.Time
	poll    time.Duration
	closeDB func() error
	q       *queries

	waiters *Waiters

	mu     sync.Mutex
	closed bool
}

// Waiters are the waiters of one store handle, by request id. The zero
// value is ready.
type Waiters struct {
	mu sync.Mutex
	m  map[string]*waiter
}

type waiter struct {
	ch   chan struct{} // closed when the request may have been settled
	refs int
}

var _ approvals.Store = (*Store)(nil)

// NewStore returns a store over db, which the caller has migrated.
func NewStore(db DB, d *Dialect, opts Options) *Store {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Waiters == nil {
		opts.Waiters = new(Waiters)
	}
	return &Store{db: db, d: d, now: opts.Now, poll: opts.Poll, closeDB: opts.Close,
		q: d.queries(), waiters: opts.Waiters}
}

// Close closes the store and its database handle.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return approvals.ErrStoreClosed
	}
	s.closed = true
	s.mu.Unlock()
	return s.closeDB()
}

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return approvals.ErrStoreClosed
	}
	return nil
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
	n, err := s.db.Exec(ctx, s.q.insertApproval,
		a.ID, string(a.State), a.Request.SessionID, s.d.Time(a.Created), s.d.nullTime(a.Request.Deadline), string(doc))
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("store approval %s: %w", a.ID, err)
	}
	if n == 0 {
		return approvals.Approval{}, fmt.Errorf("%w: %s", approvals.ErrDuplicateRequest, a.ID)
	}
	return a, nil
}

// decode decodes the stored form of the request id.
func decode(id, doc string) (approvals.Approval, error) {
	var a approvals.Approval
	if err := json.Unmarshal([]byte(doc), &a); err != nil {
		return a, fmt.Errorf("decode stored approval %s: %w", id, err)
	}
	return a, nil
}

// scanner is a DB or a Tx.
type scanner interface {
	Scan(ctx context.Context, dest []any, sql string, args ...any) error
}

// read reads the request id with the query q.
func read(ctx context.Context, db scanner, q, id string) (approvals.Approval, error) {
	var doc string
	if err := db.Scan(ctx, []any{&doc}, q, id); err != nil {
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
	a, err := read(ctx, s.db, s.q.selectApproval, id)
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
	out, err := s.query(ctx, now, s.q.listOpen, s.d.Time(now), limit)
	if err != nil || !opts.Settled || len(out) >= limit {
		return out, err
	}
	done, err := s.query(ctx, now, s.q.listSettled, s.d.Time(now), limit-len(out))
	return append(out, done...), err
}

func (s *Store) query(ctx context.Context, now time.Time, q string, args ...any) ([]approvals.Approval, error) {
	rows, err := s.db.Query(ctx, q, args...)
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

// update reads the request in a write transaction (under its row lock, or
// the database's write lock), applies fn, and writes the request back if
// fn changed it, then wakes its waiters if it became settled (see
// Dialect.Notify). fn's error is returned after the commit, with the
// request as it stands.
func (s *Store) update(ctx context.Context, id string, fn func(a *approvals.Approval) error) (approvals.Approval, error) {
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, err
	}
	tx, err := s.db.Begin(ctx)
	if err != nil {
		return approvals.Approval{}, fmt.Errorf("update approval %s: %w", id, err)
	}
	defer tx.Rollback(ctx)
	a, err := read(ctx, tx, s.q.lockedRead, id)
	if err != nil {
		return a, err
	}
	state, votes := a.State, len(a.Votes)
	ferr := fn(&a)
	if a.State == state && len(a.Votes) == votes {
		return a, ferr // the deferred Rollback ends the read
	}
	doc, err := json.Marshal(a)
	if err != nil {
		return a, fmt.Errorf("encode approval %s: %w", id, err)
	}
	settled := state == approvals.StatePending && a.State != approvals.StatePending
	stmts := []Stmt{{s.q.updateApproval, []any{string(a.State), s.d.nullTime(a.Settled), string(doc), id}}}
	if settled && s.d.Notify != "" {
		stmts = append(stmts, Stmt{s.d.Notify, []any{id}})
	}
	if err := tx.Commit(ctx, stmts...); err != nil {
		return a, fmt.Errorf("update approval %s: %w", id, err)
	}
	if settled && s.d.Notify == "" {
		s.waiters.Wake(id)
	}
	return a, ferr
}

// Vote applies one vote (approvals.CastVote) under the request's lock.
func (s *Store) Vote(ctx context.Context, id string, r approvals.Resolution) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { return approvals.CastVote(a, r, s.now()) })
}

// Expire settles an open request as expired.
func (s *Store) Expire(ctx context.Context, id string) (approvals.Approval, error) {
	return s.update(ctx, id, func(a *approvals.Approval) error { a.Expire(s.now()); return nil })
}

// Wake wakes the waiters of the request id, to re-read it.
func (w *Waiters) Wake(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wt, ok := w.m[id]; ok {
		close(wt.ch)
		wt.ch = make(chan struct{})
	}
}

// WakeAll wakes every waiter, to re-read its request.
func (w *Waiters) WakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, wt := range w.m {
		close(wt.ch)
		wt.ch = make(chan struct{})
	}
}

// register adds a waiter for id: the channel is closed when it is woken,
// and the function removes it.
func (w *Waiters) register(id string) (<-chan struct{}, func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wt, ok := w.m[id]
	if !ok {
		if w.m == nil {
			w.m = map[string]*waiter{}
		}
		wt = &waiter{ch: make(chan struct{})}
		w.m[id] = wt
	}
	wt.refs++
	return wt.ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if wt.refs--; wt.refs == 0 {
			delete(w.m, id)
		}
	}
}

// Wait blocks until the request is settled or ctx is done: it re-reads
// the request when woken (see Dialect.Notify) and at each poll. A request found past its
// deadline is settled as expired.
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
	woken, release := s.waiters.register(id)
	defer release()
	if err := s.checkOpen(); err != nil {
		return approvals.Approval{}, true, err
	}
	a, err := read(ctx, s.db, s.q.selectApproval, id)
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
	if _, err := s.db.Exec(ctx, s.q.putGrant, sessionID, g.Server, g.Tool, s.d.Time(g.Created), string(doc)); err != nil {
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
	err := s.db.Scan(ctx, []any{&doc}, s.q.selectGrant, sessionID, server, tool)
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
	if _, err := s.db.Exec(ctx, s.q.deleteGrant, sessionID, server, tool); err != nil {
		return fmt.Errorf("revoke grant: %w", err)
	}
	return nil
}
