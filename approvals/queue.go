package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Errors returned by Queue.Resolve and Queue.Submit.
var (
	// ErrAlreadyResolved: the approval was settled (approved, rejected or
	// expired) before this vote arrived; the vote changes nothing.
	ErrAlreadyResolved = errors.New("approval already resolved")
	// ErrUnknownApproval: no pending approval has this id.
	ErrUnknownApproval = errors.New("unknown approval id")
	// ErrDuplicateVote: this approver already allowed this request; a
	// second allow does not count again.
	ErrDuplicateVote = errors.New("approver already voted")
	// ErrSelfApproval: the session's own subject cannot approve its call.
	ErrSelfApproval = errors.New("the requester cannot approve its own call")
	// ErrNoApproverID: a vote must name its approver.
	ErrNoApproverID = errors.New("approver id is required")
	// ErrSessionGrant: "allow for this session" is not available for a
	// tool that needs two or more approvers.
	ErrSessionGrant = errors.New("allowing for the session is not available for this request")
	// ErrDuplicateRequest: a request with this id is already pending.
	ErrDuplicateRequest = errors.New("approval id already pending")
)

// rememberResolved is how many settled ids the queue remembers, so late
// votes get ErrAlreadyResolved rather than ErrUnknownApproval.
const rememberResolved = 4096

// Queue holds pending approvals for a chat backend: each Approve call
// registers one and blocks until it is settled; any goroutine (an HTTP
// handler, a chat bot) lists them and resolves them.
//
// Settling: any deny vetoes at once (even from an approver who allowed
// before, since a veto can only make things safer); the request is
// approved as soon as enough DISTINCT approvers allowed; the requester
// (the session subject) cannot vote on its own request; a second allow by
// the same approver counts once; the first resolution wins and later votes
// return ErrAlreadyResolved; a request still open at its deadline expires.
// The Queue is safe for concurrent use.
type Queue struct {
	mu       sync.Mutex
	pending  map[string]*pendingApproval
	resolved map[string]bool
	order    []string // resolved ids, oldest first
	opts     QueueOptions
}

// QueueOptions configure a Queue.
type QueueOptions struct {
	// OnPending is called (from the goroutine calling Approve, with no lock
	// held) each time a request starts waiting: the place to notify
	// approvers. It must not block for long.
	OnPending func(Pending)
	// OnSettled is called once per request when it is settled.
	OnSettled func(id string, v Verdict)
	// Now stamps votes; nil means time.Now.
	Now func() time.Time
}

// Pending is a snapshot of one open approval.
type Pending struct {
	ID      string
	Request Request
	Votes   []Vote
	Needed  int
	Created time.Time
}

type pendingApproval struct {
	req     Request
	created time.Time
	needed  int
	votes   []Vote
	allowed map[string]bool
	settled chan struct{}
	verdict Verdict
}

// NewQueue returns an empty queue.
func NewQueue(opts QueueOptions) *Queue {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Queue{pending: map[string]*pendingApproval{}, resolved: map[string]bool{}, opts: opts}
}

// MaxApprovers reports no limit: a queue can gather any number of people.
func (q *Queue) MaxApprovers() int { return int(^uint(0) >> 1) }

// Approve registers req (with req.ID, or a fresh id when empty) and waits
// until it is settled, ctx is done, or req.Deadline passes. A request that
// runs out of time returns the votes gathered so far with Expired set (and
// no error when the deadline was req.Deadline; ctx.Err() when ctx ended).
func (q *Queue) Approve(ctx context.Context, req *Request) (Verdict, error) {
	r := *req
	if r.ID == "" {
		r.ID = newID("apr_")
	}
	p := &pendingApproval{
		req:     r,
		created: q.opts.Now(),
		needed:  max(r.Approvers, 1),
		allowed: map[string]bool{},
		settled: make(chan struct{}),
	}
	q.mu.Lock()
	if _, dup := q.pending[r.ID]; dup || q.resolved[r.ID] {
		q.mu.Unlock()
		return Verdict{}, fmt.Errorf("%w: %s", ErrDuplicateRequest, r.ID)
	}
	q.pending[r.ID] = p
	snapshot := p.snapshot(r.ID)
	q.mu.Unlock()
	if q.opts.OnPending != nil {
		q.opts.OnPending(snapshot)
	}

	var deadline <-chan time.Time
	if !r.Deadline.IsZero() {
		t := time.NewTimer(time.Until(r.Deadline))
		defer t.Stop()
		deadline = t.C
	}
	var ctxErr error
	select {
	case <-p.settled:
		return p.verdict, nil
	case <-deadline:
	case <-ctx.Done():
		ctxErr = ctx.Err()
	}
	q.mu.Lock()
	settledNow := q.settle(r.ID, p, Verdict{Votes: slices.Clone(p.votes), Expired: true})
	v := p.verdict
	q.mu.Unlock()
	if settledNow {
		q.notifySettled(r.ID, v)
		return v, ctxErr
	}
	return v, nil // a vote settled it while we were timing out: it won
}

// settle records the verdict if p is still open; q.mu must be held.
func (q *Queue) settle(id string, p *pendingApproval, v Verdict) bool {
	if _, open := q.pending[id]; !open {
		return false
	}
	delete(q.pending, id)
	q.resolved[id] = true
	q.order = append(q.order, id)
	if len(q.order) > rememberResolved {
		delete(q.resolved, q.order[0])
		q.order = q.order[1:]
	}
	p.verdict = v
	close(p.settled)
	return true
}

func (q *Queue) notifySettled(id string, v Verdict) {
	if q.opts.OnSettled != nil {
		q.opts.OnSettled(id, v)
	}
}

func (p *pendingApproval) snapshot(id string) Pending {
	req := p.req
	req.Arguments = slices.Clone(req.Arguments)
	req.Rules = slices.Clone(req.Rules)
	req.Risk = req.Risk.clone()
	return Pending{ID: id, Request: req, Votes: slices.Clone(p.votes), Needed: p.needed, Created: p.created}
}

// List returns the open approvals, oldest first.
func (q *Queue) List() []Pending {
	q.mu.Lock()
	out := make([]Pending, 0, len(q.pending))
	for id, p := range q.pending {
		out = append(out, p.snapshot(id))
	}
	q.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Get returns one open approval.
func (q *Queue) Get(id string) (Pending, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	p, ok := q.pending[id]
	if !ok {
		return Pending{}, false
	}
	return p.snapshot(id), true
}

// Resolution is one approver's vote on a pending approval.
type Resolution struct {
	ApproverID string
	Allow      bool
	// ForSession allows the tool for the rest of the session (only for
	// requests that need a single approver).
	ForSession bool
	// Note is the approver's comment; a deny note is quoted to the model
	// (control characters stripped, at most 200 characters).
	Note string
}

// Resolve casts a vote: allow or deny, with an optional note.
func (q *Queue) Resolve(id, approverID string, allow bool, note string) error {
	return q.Submit(id, Resolution{ApproverID: approverID, Allow: allow, Note: note})
}

// Submit casts a vote. It returns nil when the vote counted (whether or not
// it settled the request), ErrAlreadyResolved for late votes,
// ErrDuplicateVote for a repeated allow, and ErrUnknownApproval,
// ErrSelfApproval, ErrNoApproverID or ErrSessionGrant for votes that
// cannot count.
func (q *Queue) Submit(id string, r Resolution) error {
	// Votes keep the id as given; distinct approvers and the self-approval
	// check use the normalised id.
	given := strings.TrimSpace(r.ApproverID)
	approver := normalizeID(given)
	if approver == "" {
		return ErrNoApproverID
	}
	q.mu.Lock()
	p, ok := q.pending[id]
	if !ok {
		resolved := q.resolved[id]
		q.mu.Unlock()
		if resolved {
			return fmt.Errorf("%w: %s", ErrAlreadyResolved, id)
		}
		return fmt.Errorf("%w: %s", ErrUnknownApproval, id)
	}
	switch {
	case approver == normalizeID(p.req.Requester):
		q.mu.Unlock()
		return ErrSelfApproval
	case r.Allow && r.ForSession && !p.req.SessionGrantable:
		q.mu.Unlock()
		return ErrSessionGrant
	case r.Allow && p.allowed[approver]:
		q.mu.Unlock()
		return ErrDuplicateVote
	}
	vote := Vote{ApproverID: given, TS: q.opts.Now().UTC(), Note: r.Note, ForSession: r.Allow && r.ForSession}
	vote.Decision = VoteDeny
	if r.Allow {
		vote.Decision = VoteAllow
		p.allowed[approver] = true
	}
	p.votes = append(p.votes, vote)
	settled := false
	if !r.Allow || len(p.allowed) >= p.needed {
		settled = q.settle(id, p, Verdict{Votes: slices.Clone(p.votes)})
	}
	v := p.verdict
	q.mu.Unlock()
	if settled {
		q.notifySettled(id, v)
	}
	return nil
}

// newID returns prefix followed by 16 random hex characters.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b[:])
}
