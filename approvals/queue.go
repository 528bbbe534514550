package approvals

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	// ErrSelfApproval: the requester (the session's subject, or the API
	// identity that started the turn) cannot approve its call.
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
// handler, a chat bot) lists them and resolves them. It is a StoreApprover
// over a MemStore, whose votes follow CastVote's rules.
//
// Settling: any deny vetoes at once (even from an approver who allowed
// before, since a veto can only make things safer); the request is
// approved as soon as enough DISTINCT approvers allowed; the requester
// (the session subject) cannot vote on its own request; a second allow by
// the same approver counts once; the first resolution wins and later votes
// return ErrAlreadyResolved; a request still open at its deadline expires.
// The Queue is safe for concurrent use.
type Queue struct {
	store *MemStore
	opts  QueueOptions
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

// NewQueue returns an empty queue.
func NewQueue(opts QueueOptions) *Queue {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	q := &Queue{opts: opts}
	mopts := MemStoreOptions{Now: opts.Now}
	if opts.OnSettled != nil {
		mopts.OnSettled = func(a Approval) { opts.OnSettled(a.ID, a.Verdict()) }
	}
	q.store = NewMemStore(mopts)
	return q
}

// Store is the queue's MemStore, for code written against the Store
// interface (an HTTP API listing and voting on approvals).
func (q *Queue) Store() *MemStore { return q.store }

// MaxApprovers reports no limit: a queue can gather any number of people.
func (q *Queue) MaxApprovers() int { return int(^uint(0) >> 1) }

// Approve registers req (with req.ID, or a fresh id when empty) and waits
// until it is settled, ctx is done, or req.Deadline passes. A request that
// runs out of time returns the votes gathered so far with Expired set (and
// no error when the deadline was req.Deadline; ctx.Err() when ctx ended).
func (q *Queue) Approve(ctx context.Context, req *Request) (Verdict, error) {
	wctx := ctx
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	sa := StoreApprover{Store: q.store}
	if q.opts.OnPending != nil {
		sa.OnRaised = func(a Approval) { q.opts.OnPending(a.Pending) }
	}
	v, err := sa.Approve(wctx, req)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return v, nil // req.Deadline passed: expired, not an error
	}
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return v, ctx.Err()
	}
	return v, err
}

// List returns the open approvals, oldest first.
func (q *Queue) List() []Pending {
	all, _ := q.store.List(context.Background(), ListOptions{Limit: int(^uint(0) >> 1)}) // a MemStore fails only when closed
	out := make([]Pending, len(all))
	for i := range all {
		out[i] = all[i].Pending
	}
	return out
}

// Get returns one open approval.
func (q *Queue) Get(id string) (Pending, bool) {
	a, err := q.store.Get(context.Background(), id)
	if err != nil || a.State != StatePending {
		return Pending{}, false
	}
	return a.Pending, true
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
	_, err := q.store.Vote(context.Background(), id, r)
	return err
}

// newID returns prefix followed by 16 random hex characters.
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + hex.EncodeToString(b[:])
}
