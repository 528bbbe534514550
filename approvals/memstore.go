package approvals

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// memGrantLimit bounds the grants a MemStore keeps (all sessions
// together); the oldest is dropped first.
const memGrantLimit = 65536

// MemStore is the in-memory Store: one process, nothing survives a
// restart. It backs the Queue and the tests. It remembers the last 4096
// settled requests, so that late votes get ErrAlreadyResolved rather than
// ErrUnknownApproval. Safe for concurrent use.
type MemStore struct {
	mu         sync.Mutex
	entries    map[string]*memEntry
	settled    []string // settled ids, oldest first
	grants     map[memGrantKey]Grant
	grantOrder []memGrantKey
	closed     bool
	now        func() time.Time
	onSettled  func(Approval)
}

type memEntry struct {
	a    Approval
	done chan struct{} // closed when settled
}

type memGrantKey struct{ session, server, tool string }

// MemStoreOptions configure a MemStore.
type MemStoreOptions struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnSettled is called once per request when it is settled (with no
	// lock held).
	OnSettled func(Approval)
}

// NewMemStore returns an empty in-memory store.
func NewMemStore(opts MemStoreOptions) *MemStore {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &MemStore{entries: map[string]*memEntry{}, grants: map[memGrantKey]Grant{}, now: opts.Now, onSettled: opts.OnSettled}
}

// Raise records req as pending.
func (s *MemStore) Raise(_ context.Context, req *Request) (Approval, error) {
	a := NewApproval(req, s.now())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Approval{}, ErrStoreClosed
	}
	if _, dup := s.entries[a.ID]; dup {
		return Approval{}, fmt.Errorf("%w: %s", ErrDuplicateRequest, a.ID)
	}
	s.entries[a.ID] = &memEntry{a: a, done: make(chan struct{})}
	return a.Clone(), nil
}

func (s *MemStore) lookup(id string) (*memEntry, error) {
	if s.closed {
		return nil, ErrStoreClosed
	}
	e, ok := s.entries[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownApproval, id)
	}
	return e, nil
}

// Get returns one request as seen now.
func (s *MemStore) Get(_ context.Context, id string) (Approval, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.lookup(id)
	if err != nil {
		return Approval{}, err
	}
	return e.a.Clone().View(s.now()), nil
}

// List returns open requests oldest first, then (with opts.Settled)
// settled ones, most recently settled first.
func (s *MemStore) List(_ context.Context, opts ListOptions) ([]Approval, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	now := s.now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrStoreClosed
	}
	var open, done []Approval
	for _, e := range s.entries {
		switch v := e.a.View(now); {
		case v.State == StatePending:
			open = append(open, e.a.Clone())
		case opts.Settled:
			done = append(done, v.Clone())
		}
	}
	s.mu.Unlock()
	sortApprovals(open, done)
	return append(open, done...)[:min(limit, len(open)+len(done))], nil
}

// sortApprovals orders open requests oldest first and settled ones most
// recently settled first (ties by id).
func sortApprovals(open, done []Approval) {
	sort.Slice(open, func(i, j int) bool {
		if !open[i].Created.Equal(open[j].Created) {
			return open[i].Created.Before(open[j].Created)
		}
		return open[i].ID < open[j].ID
	})
	sort.Slice(done, func(i, j int) bool {
		if !done[i].Settled.Equal(done[j].Settled) {
			return done[i].Settled.After(done[j].Settled)
		}
		return done[i].ID < done[j].ID
	})
}

// Vote applies one vote (see CastVote).
func (s *MemStore) Vote(_ context.Context, id string, r Resolution) (Approval, error) {
	s.mu.Lock()
	e, err := s.lookup(id)
	if err != nil {
		s.mu.Unlock()
		return Approval{}, err
	}
	was := e.a.State
	err = CastVote(&e.a, r, s.now())
	out := e.a.Clone()
	settled := was == StatePending && e.a.State != StatePending
	if settled {
		s.settleLocked(e)
	}
	s.mu.Unlock()
	if settled && s.onSettled != nil {
		s.onSettled(out.Clone())
	}
	return out, err
}

// Expire settles an open request as expired.
func (s *MemStore) Expire(_ context.Context, id string) (Approval, error) {
	s.mu.Lock()
	e, err := s.lookup(id)
	if err != nil {
		s.mu.Unlock()
		return Approval{}, err
	}
	settled := e.a.Expire(s.now())
	if settled {
		s.settleLocked(e)
	}
	out := e.a.Clone()
	s.mu.Unlock()
	if settled && s.onSettled != nil {
		s.onSettled(out.Clone())
	}
	return out, nil
}

// settleLocked wakes e's waiters and remembers it among the settled;
// s.mu must be held.
func (s *MemStore) settleLocked(e *memEntry) {
	close(e.done)
	s.settled = append(s.settled, e.a.ID)
	if len(s.settled) > rememberResolved {
		delete(s.entries, s.settled[0])
		s.settled = s.settled[1:]
	}
}

// Wait blocks until the request is settled or ctx is done.
func (s *MemStore) Wait(ctx context.Context, id string) (Approval, error) {
	s.mu.Lock()
	e, err := s.lookup(id)
	s.mu.Unlock()
	if err != nil {
		return Approval{}, err
	}
	select {
	case <-e.done:
		s.mu.Lock()
		defer s.mu.Unlock()
		return e.a.Clone(), nil
	case <-ctx.Done():
		return Approval{}, ctx.Err()
	}
}

// PutGrant stores (or replaces) a session grant.
func (s *MemStore) PutGrant(_ context.Context, sessionID string, g Grant) error {
	k := memGrantKey{sessionID, g.Server, g.Tool}
	g.Ceiling = g.Ceiling.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	if _, ok := s.grants[k]; !ok {
		s.grantOrder = append(s.grantOrder, k)
		for len(s.grantOrder) > memGrantLimit {
			delete(s.grants, s.grantOrder[0])
			s.grantOrder = s.grantOrder[1:]
		}
	}
	s.grants[k] = g
	return nil
}

// GetGrant returns a session grant.
func (s *MemStore) GetGrant(_ context.Context, sessionID, server, tool string) (Grant, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Grant{}, false, ErrStoreClosed
	}
	g, ok := s.grants[memGrantKey{sessionID, server, tool}]
	if ok {
		g.Ceiling = g.Ceiling.Clone()
	}
	return g, ok, nil
}

// RevokeGrant drops a session grant.
func (s *MemStore) RevokeGrant(_ context.Context, sessionID, server, tool string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStoreClosed
	}
	k := memGrantKey{sessionID, server, tool}
	if _, ok := s.grants[k]; ok {
		delete(s.grants, k)
		s.grantOrder = slices.DeleteFunc(s.grantOrder, func(o memGrantKey) bool { return o == k })
	}
	return nil
}

// Close makes later calls fail with ErrStoreClosed. Waiters are not woken:
// their contexts end them.
func (s *MemStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
