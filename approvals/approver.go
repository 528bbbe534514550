package approvals

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
)

// Request is what an approver is asked to decide.
type Request struct {
	// ID identifies the request (the Queue's pending-approval id).
	ID        string
	SessionID string
	CallID    string
	// Requester is the session's subject. It never counts towards the
	// quorum of its own request.
	Requester string
	// RequestedBy is the authenticated caller that started the turn
	// asking (an identity of agenthost serve; empty elsewhere). Like the
	// Requester, it cannot vote on its own request: a caller that may also
	// approve cannot approve its own calls by choosing another subject.
	RequestedBy string
	Server      string
	Tool        string
	// Arguments are the model's arguments only; secure values never appear.
	Arguments json.RawMessage
	// Risk is the effective metadata after the call-time escalators.
	Risk risk.Effective
	// Rules, Message and Reason say why approval is needed. They are for
	// approvers (people), never shown to the model.
	Rules   []string
	Message string
	Reason  string
	// Approvers is how many distinct approvers must allow.
	Approvers int
	// Deadline is when the request expires (and the call is denied).
	Deadline time.Time
	// SessionGrantable reports whether "allow for this session" may be
	// offered: never for tools that need two or more approvers, and never
	// for unclassified tools.
	SessionGrantable bool
	// Unclassified: nobody classified the tool (see UnclassifiedAsk); Hints
	// are the server's own declarations about it, untrusted.
	Unclassified bool
	Hints        []string
	// Conversation is where the call came from, as the model saw it, for
	// approvers (see Conversation); empty for a call made outside a turn.
	Conversation Conversation
	// Resumable: the id is the asking call's durable one (Check.RequestID).
	// A StoreApprover takes up a request already raised under it, when it
	// asks the same thing (ErrRequestMismatch otherwise), and waits for it
	// until the deadline it was raised with, not a new one.
	Resumable bool
}

// Conversation is the context of a model's call for its approvers: the
// user's last message and the model's text before the call, as the model
// saw them, with protected values masked. The host fills it; each text is
// at most MaxConversationText bytes (longer ones are cut, marked "…").
type Conversation struct {
	UserMessage string `json:"userMessage,omitempty"`
	ModelText   string `json:"modelText,omitempty"`
}

// MaxConversationText bounds each text of a Conversation.
const MaxConversationText = 4000

// MayVote reports whether approverID may vote on the request: a valid id
// that is neither the requester nor the identity that started the turn
// (the rule CastVote applies).
func (r *Request) MayVote(approverID string) bool {
	_, err := voterKey(approverID, r.Requester, r.RequestedBy)
	return err == nil
}

// VoteDecision is one approver's answer.
type VoteDecision string

// Vote decisions.
const (
	VoteAllow VoteDecision = "allow"
	VoteDeny  VoteDecision = "deny"
)

// Vote is one approver's answer, as recorded in the audit log
// ({id, decision, ts}).
type Vote struct {
	ApproverID string       `json:"id"`
	Decision   VoteDecision `json:"decision"`
	TS         time.Time    `json:"ts"`
	// Note is the approver's comment; a deny note is quoted to the model.
	Note string `json:"-"`
	// ForSession asks to allow this tool for the rest of the session.
	ForSession bool `json:"-"`
}

// Verdict is what an approver came back with: the votes cast, and whether
// the request ran out of time before they settled it. The Gate, not the
// approver, decides whether the votes make a quorum.
type Verdict struct {
	Votes   []Vote
	Expired bool
}

// Approver answers ask decisions. Approve blocks until the request is
// settled or ctx is done (the Gate sets ctx's deadline to the ask's
// timeout); returning ctx.Err() then counts as expired. An approver that
// returns without any votes means no approver was available.
type Approver interface {
	Approve(ctx context.Context, req *Request) (Verdict, error)
}

// ApproverFunc adapts a blocking callback to Approver.
type ApproverFunc func(ctx context.Context, req *Request) (Verdict, error)

// Approve calls f.
func (f ApproverFunc) Approve(ctx context.Context, req *Request) (Verdict, error) { return f(ctx, req) }

// Limited is implemented by approvers that can supply at most a fixed
// number of distinct approvers. The Gate does not ask them for requests
// that need more, and denies with reason no_approver.
type Limited interface {
	MaxApprovers() int
}

// Identified is implemented by approvers that vote under one fixed id (a
// person at a terminal). The Gate does not ask such an approver about a
// call whose requester is that same person (see ids.SameID): the answer could
// not count. It refuses the call at once, saying why.
type Identified interface {
	ApproverID() string
}

// Deny answers every ask with "no approver available". It is the default
// when nobody can be asked (non-interactive runs).
type Deny struct{}

// Approve returns no votes.
func (Deny) Approve(context.Context, *Request) (Verdict, error) { return Verdict{}, nil }

// MaxApprovers is 0: Deny never approves.
func (Deny) MaxApprovers() int { return 0 }

// autoApproverID is the approver id Auto votes under.
const autoApproverID = "auto"

// Auto approves every ask as ONE approver with id "auto" (for scripts and
// tests). Asks that need two or more distinct approvers are therefore not
// satisfied: the Gate rejects them with reason no_approver. Deny rules and
// trust gating still apply because Auto is only asked for asks.
type Auto struct {
	// Now stamps votes; nil means time.Now.
	Now func() time.Time
}

// Approve votes allow once.
func (a Auto) Approve(context.Context, *Request) (Verdict, error) {
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	return Verdict{Votes: []Vote{{ApproverID: autoApproverID, Decision: VoteAllow, TS: now().UTC()}}}, nil
}

// MaxApprovers is 1.
func (Auto) MaxApprovers() int { return 1 }

// ApproverID is autoApproverID.
func (Auto) ApproverID() string { return autoApproverID }
