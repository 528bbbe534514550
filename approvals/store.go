package approvals

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// State is where a stored approval request stands.
type State string

// States of an approval request. Expired (nobody decided before the
// deadline, or the asking call gave up) is distinct from rejected (an
// approver said no).
const (
	StatePending  State = "pending"
	StateApproved State = "approved"
	StateRejected State = "rejected"
	StateExpired  State = "expired"
)

// ErrStoreClosed is returned by a Store used after Close.
var ErrStoreClosed = errors.New("approvals store closed")

// Approval is one approval request as a Store keeps it: the request, the
// votes cast so far, and its state. Pending approvals have State
// StatePending and a zero Settled time.
type Approval struct {
	Pending
	State   State
	Settled time.Time
}

// NewApproval is the pending approval for req, raised at now. A request
// without an id gets a fresh one.
func NewApproval(req *Request, now time.Time) Approval {
	r := *req
	if r.ID == "" {
		r.ID = newID("apr_")
	}
	r.Arguments = slices.Clone(r.Arguments)
	r.Rules = slices.Clone(r.Rules)
	r.Hints = slices.Clone(r.Hints)
	r.Risk = r.Risk.Clone()
	return Approval{
		Pending: Pending{ID: r.ID, Request: r, Needed: max(r.Approvers, 1), Created: now.UTC()},
		State:   StatePending,
	}
}

// Open reports whether the approval still takes votes (at time now: an
// open request past its deadline is no longer open).
func (a *Approval) Open(now time.Time) bool {
	return a.State == StatePending && !a.overdue(now)
}

func (a *Approval) overdue(now time.Time) bool {
	return !a.Request.Deadline.IsZero() && !now.Before(a.Request.Deadline)
}

// Verdict is what the approval tells the Gate: the votes, and whether it
// expired.
func (a *Approval) Verdict() Verdict {
	return Verdict{Votes: slices.Clone(a.Votes), Expired: a.State == StateExpired}
}

// Clone returns a deep copy (stores hand out copies).
func (a Approval) Clone() Approval {
	a.Pending = a.Pending.clone()
	return a
}

func (p Pending) clone() Pending {
	p.Request.Arguments = slices.Clone(p.Request.Arguments)
	p.Request.Rules = slices.Clone(p.Request.Rules)
	p.Request.Hints = slices.Clone(p.Request.Hints)
	p.Request.Risk = p.Request.Risk.Clone()
	p.Votes = slices.Clone(p.Votes)
	return p
}

// View is the approval as seen at now: an open request past its deadline
// shows as expired (the store records that on the next write).
func (a Approval) View(now time.Time) Approval {
	if a.State == StatePending && a.overdue(now) {
		a.State, a.Settled = StateExpired, a.Request.Deadline.UTC()
	}
	return a
}

// Expire settles an open approval as expired at now, reporting whether it
// was open. Settled approvals are left as they are.
func (a *Approval) Expire(now time.Time) bool {
	if a.State != StatePending {
		return false
	}
	a.State, a.Settled = StateExpired, now.UTC()
	return true
}

// CastVote applies one vote to a: the one place the quorum rules live;
// every Store calls it with the request locked. Any deny vetoes at once
// (even from an approver who allowed before); the request is approved as
// soon as enough distinct approvers (ids compared normalised, see
// ids.NormalizeID) allowed; an approver id that is not valid cannot vote
// (ErrInvalidApproverID); the requester, the session's subject or the API
// identity that started the turn (Request.RequestedBy), cannot vote
// (ErrSelfApproval); a repeated allow
// counts once (ErrDuplicateVote); votes on a settled request, or on one
// past its deadline (which this call then settles as expired), return
// ErrAlreadyResolved. On an error a is unchanged except for that expiry.
func CastVote(a *Approval, r Resolution, now time.Time) error {
	given := strings.TrimSpace(r.ApproverID)
	if _, err := voterKey(given); err != nil {
		return err
	}
	if a.State == StatePending && a.overdue(now) {
		a.Expire(a.Request.Deadline)
	}
	if a.State != StatePending {
		return fmt.Errorf("%w: %s is %s", ErrAlreadyResolved, a.ID, a.State)
	}
	approver, err := voterKey(given, a.Request.Requester, a.Request.RequestedBy)
	if err != nil {
		return err
	}
	if r.Allow && r.ForSession && !a.Request.SessionGrantable {
		return ErrSessionGrant
	}
	allowed := map[string]bool{}
	for _, v := range a.Votes {
		if v.Decision == VoteAllow {
			if key, err := ids.NormalizeID(v.ApproverID); err == nil {
				allowed[key] = true
			}
		}
	}
	if r.Allow && allowed[approver] {
		return ErrDuplicateVote
	}
	vote := Vote{ApproverID: given, TS: now.UTC(), Note: r.Note, ForSession: r.Allow && r.ForSession, Decision: VoteDeny}
	if r.Allow {
		vote.Decision = VoteAllow
		allowed[approver] = true
	}
	a.Votes = append(a.Votes, vote)
	switch {
	case !r.Allow:
		a.State, a.Settled = StateRejected, now.UTC()
	case len(allowed) >= a.Needed:
		a.State, a.Settled = StateApproved, now.UTC()
	}
	return nil
}

// ListOptions select what Store.List returns.
type ListOptions struct {
	// Settled includes settled requests (most recent first after the open
	// ones); by default only open requests are listed.
	Settled bool
	// Limit caps the answer; 0 means DefaultListLimit.
	Limit int
}

// DefaultListLimit is how many approvals List returns at most by default.
const DefaultListLimit = 1000

// Grant is one "allow for this session" answer kept in a Store: it covers
// calls to Server/Tool with definition hash DefHash whose effective risk
// is within Ceiling.
type Grant struct {
	Server  string         `json:"server"`
	Tool    string         `json:"tool"`
	DefHash string         `json:"toolDefHash"`
	Ceiling risk.Effective `json:"ceiling"`
	Created time.Time      `json:"createdAt"`
}

// GrantStore keeps session grants where every replica of a session sees
// them. GetGrant reports found=false (and no error) when there is none.
type GrantStore interface {
	PutGrant(ctx context.Context, sessionID string, g Grant) error
	GetGrant(ctx context.Context, sessionID, server, tool string) (Grant, bool, error)
	RevokeGrant(ctx context.Context, sessionID, server, tool string) error
}

// Store keeps approval requests, their votes and outcomes, and session
// grants, shared by everything that opens it: the in-memory MemStore for
// one process, and the SQLite and PostgreSQL stores (sub-packages
// sqlitestore and pgstore) for one node or many replicas. Every
// implementation passes the conformance suite in approvals/storetest.
//
//   - Raise records req as pending (ErrDuplicateRequest if its id is
//     known) and returns it.
//   - Get returns one request in any state (ErrUnknownApproval), as seen
//     now (see Approval.View).
//   - List returns open requests oldest first (and settled ones with
//     ListOptions.Settled).
//   - Vote applies a vote with CastVote, atomically with every other
//     replica's votes, and returns the request as it stands after it.
//   - Expire settles an open request as expired; a settled request is
//     returned unchanged.
//   - Wait blocks until the request is settled (by anyone, on any
//     replica) or ctx is done; it does not expire the request itself.
type Store interface {
	GrantStore
	Raise(ctx context.Context, req *Request) (Approval, error)
	Get(ctx context.Context, id string) (Approval, error)
	List(ctx context.Context, opts ListOptions) ([]Approval, error)
	Vote(ctx context.Context, id string, r Resolution) (Approval, error)
	Expire(ctx context.Context, id string) (Approval, error)
	Wait(ctx context.Context, id string) (Approval, error)
	Close() error
}

// StoreApprover raises each ask in a Store and waits for votes cast from
// anywhere (another replica, `agenthost approvals approve`, an HTTP
// handler) until the ask's timeout, which then settles it as expired.
type StoreApprover struct {
	Store Store
	// OnRaised, if set, is called once the request is in the store (the
	// place to tell people where to vote). It must not block for long.
	OnRaised func(Approval)
	// OnResumed, if set, is called instead of OnRaised when the request
	// was raised before (a durable call taken up again after a restart):
	// the people told then need not be told twice. Nil: OnRaised is
	// called for a resumed request too.
	OnResumed func(Approval)
}

// MaxApprovers reports no limit.
func (StoreApprover) MaxApprovers() int { return int(^uint(0) >> 1) }

// expireTimeout bounds how long recording an expiry may take once the
// waiting call's own context has ended.
const expireTimeout = 5 * time.Second

// Approve raises req and waits until it is settled or ctx is done. When
// ctx ends first the request is settled as expired (unless a vote settled
// it meanwhile, which then wins) and ctx's error is returned with the
// votes gathered.
func (s StoreApprover) Approve(ctx context.Context, req *Request) (Verdict, error) {
	a, err := s.Store.Raise(ctx, req)
	resumed := false
	if err != nil && req.Resumable && errors.Is(err, ErrDuplicateRequest) {
		a, err = s.resume(ctx, req)
		resumed = true
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("raise approval request: %w", err)
	}
	switch {
	case resumed && s.OnResumed != nil:
		s.OnResumed(a.Clone())
	case s.OnRaised != nil:
		s.OnRaised(a.Clone())
	}
	// A request taken up again keeps the deadline it was raised with.
	wctx := ctx
	if resumed && !a.Request.Deadline.IsZero() {
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, a.Request.Deadline)
		defer cancel()
	}
	settled, err := s.Store.Wait(wctx, a.ID)
	if err == nil {
		return settled.Verdict(), nil
	}
	if wctx.Err() == nil {
		return Verdict{}, fmt.Errorf("wait for approval %s: %w", a.ID, err)
	}
	if errors.Is(context.Cause(ctx), ErrDetached) {
		return Verdict{}, context.Cause(ctx)
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), expireTimeout)
	defer cancel()
	final, eerr := s.Store.Expire(ectx, a.ID)
	if eerr != nil {
		return Verdict{Expired: true}, errors.Join(wctx.Err(), fmt.Errorf("record approval %s as expired: %w", a.ID, eerr))
	}
	if final.State != StateExpired {
		return final.Verdict(), nil // a vote settled it while we were timing out: it won
	}
	if ctx.Err() == nil {
		return final.Verdict(), nil // the request's own deadline passed
	}
	return final.Verdict(), ctx.Err()
}

// ErrDetached is the cause a durable caller cancels an approval wait with
// when its process is going but the call is to be taken up again later:
// StoreApprover then leaves the request pending (it is not expired), so
// votes cast meanwhile count when the call resumes.
var ErrDetached = errors.New("the waiting call was detached; it resumes later")

// ErrRequestMismatch: a resumable request's id is known to the store for
// another call (another session, subject, server, tool or arguments).
var ErrRequestMismatch = errors.New("the approval request stored under this id asks for another call")

// resume takes up the request raised before under req's id: the stored
// request must ask for the same call (session, subject, server, tool, and
// the same arguments, compared canonically).
func (s StoreApprover) resume(ctx context.Context, req *Request) (Approval, error) {
	a, err := s.Store.Get(ctx, req.ID)
	if err != nil {
		return Approval{}, err
	}
	r := &a.Request
	if r.SessionID != req.SessionID || r.Requester != req.Requester || r.Server != req.Server || r.Tool != req.Tool ||
		!sameJSON(r.Arguments, req.Arguments) {
		return Approval{}, fmt.Errorf("%w: %s", ErrRequestMismatch, req.ID)
	}
	return a, nil
}

// decodeNumbers decodes b keeping numbers as written.
func decodeNumbers(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// sameJSON reports whether a and b are the same JSON value (object keys in
// any order); two texts that are not JSON compare as bytes.
func sameJSON(a, b json.RawMessage) bool {
	x, errA := decodeNumbers(a)
	y, errB := decodeNumbers(b)
	if errA != nil || errB != nil {
		return string(a) == string(b)
	}
	ca, _ := json.Marshal(x)
	cb, _ := json.Marshal(y)
	return string(ca) == string(cb)
}

// approvalJSON is the wire and storage form of an Approval; its keys are
// documented in docs/cli.md (approvals list --json).
type approvalJSON struct {
	ID               string          `json:"id"`
	State            State           `json:"state"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Session          string          `json:"session"`
	CallID           string          `json:"callId"`
	Subject          string          `json:"subject"`
	RequestedBy      string          `json:"requestedBy,omitempty"`
	Arguments        json.RawMessage `json:"arguments"`
	Risk             risk.Effective  `json:"risk"`
	Rules            []string        `json:"rules"`
	Message          string          `json:"message"`
	Reason           string          `json:"reason"`
	Approvers        int             `json:"approvers"`
	Votes            []voteJSON      `json:"votes"`
	CreatedAt        time.Time       `json:"createdAt"`
	ExpiresAt        *time.Time      `json:"expiresAt"`
	SettledAt        *time.Time      `json:"settledAt"`
	SessionGrantable bool            `json:"sessionGrantable"`
	Unclassified     bool            `json:"unclassified"`
	Hints            []string        `json:"hints"`
	Conversation     Conversation    `json:"conversation,omitzero"`
}

type voteJSON struct {
	ID         string       `json:"id"`
	Decision   VoteDecision `json:"decision"`
	TS         time.Time    `json:"ts"`
	Note       string       `json:"note,omitempty"`
	ForSession bool         `json:"forSession,omitempty"`
}

// MarshalJSON writes the approval as one object with the keys id, state,
// server, tool, session, callId, subject, requestedBy (left out when
// empty), arguments, risk, rules, message,
// reason, approvers (how many must allow), votes ([{id, decision, ts,
// note, forSession}]), createdAt, expiresAt, settledAt, sessionGrantable,
// unclassified, hints and conversation ({userMessage, modelText}, left
// out when empty). Lists are [] when empty; absent times are null.
func (a Approval) MarshalJSON() ([]byte, error) {
	r := &a.Request
	j := approvalJSON{
		ID: a.ID, State: a.State, Server: r.Server, Tool: r.Tool, Session: r.SessionID, CallID: r.CallID,
		Subject: r.Requester, RequestedBy: r.RequestedBy, Arguments: norm.JSONOrString(r.Arguments), Risk: r.Risk, Rules: r.Rules,
		Message: r.Message, Reason: r.Reason, Approvers: a.Needed, Votes: make([]voteJSON, 0, len(a.Votes)),
		CreatedAt: a.Created, SessionGrantable: r.SessionGrantable, Unclassified: r.Unclassified, Hints: r.Hints,
		Conversation: r.Conversation,
	}
	if len(j.Arguments) == 0 {
		j.Arguments = json.RawMessage("null")
	}
	if j.Rules == nil {
		j.Rules = []string{}
	}
	if j.Hints == nil {
		j.Hints = []string{}
	}
	for _, v := range a.Votes {
		j.Votes = append(j.Votes, voteJSON{ID: v.ApproverID, Decision: v.Decision, TS: v.TS, Note: v.Note, ForSession: v.ForSession})
	}
	if !r.Deadline.IsZero() {
		t := r.Deadline.UTC()
		j.ExpiresAt = &t
	}
	if !a.Settled.IsZero() {
		t := a.Settled.UTC()
		j.SettledAt = &t
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Approval) UnmarshalJSON(b []byte) error {
	var j approvalJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*a = Approval{
		Pending: Pending{ID: j.ID, Needed: j.Approvers, Created: j.CreatedAt, Request: Request{
			ID: j.ID, SessionID: j.Session, CallID: j.CallID, Requester: j.Subject, RequestedBy: j.RequestedBy, Server: j.Server, Tool: j.Tool,
			Arguments: j.Arguments, Risk: j.Risk, Rules: j.Rules, Message: j.Message, Reason: j.Reason,
			Approvers: j.Approvers, SessionGrantable: j.SessionGrantable, Unclassified: j.Unclassified, Hints: j.Hints,
			Conversation: j.Conversation,
		}},
		State: j.State,
	}
	if string(a.Request.Arguments) == "null" {
		a.Request.Arguments = nil
	}
	if j.ExpiresAt != nil {
		a.Request.Deadline = *j.ExpiresAt
	}
	if j.SettledAt != nil {
		a.Settled = *j.SettledAt
	}
	for _, v := range j.Votes {
		a.Votes = append(a.Votes, Vote{ApproverID: v.ID, Decision: v.Decision, TS: v.TS, Note: v.Note, ForSession: v.ForSession})
	}
	return nil
}
