package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/host/serve/internal/auth"
	"github.com/agenthost/agenthost/host/serve/internal/sse"
)

// replicaApprover asks the server's queue, with the replica id in front
// of the request id so any replica can tell where an approval waits.
type replicaApprover struct {
	q      *approvals.Queue
	prefix string
}

func (a replicaApprover) Approve(ctx context.Context, req *approvals.Request) (approvals.Verdict, error) {
	if a.prefix == "" {
		return a.q.Approve(ctx, req)
	}
	r := *req
	r.ID = a.prefix + r.ID
	return a.q.Approve(ctx, &r)
}

// MaxApprovers: the queue gathers any number of people.
func (a replicaApprover) MaxApprovers() int { return a.q.MaxApprovers() }

// sessionApprover is the approver of one served session: each request it
// raises records the API identity whose turn asks (RequestedBy), which
// approvals.CastVote then refuses as an approver of it, whatever subject
// the session was given.
type sessionApprover struct {
	base approvals.Approver
	ss   *servedSession
}

func (a sessionApprover) Approve(ctx context.Context, req *approvals.Request) (approvals.Verdict, error) {
	r := *req
	r.RequestedBy = a.ss.requestedBy()
	return a.base.Approve(ctx, &r)
}

// MaxApprovers is the base approver's.
func (a sessionApprover) MaxApprovers() int {
	if l, ok := a.base.(approvals.Limited); ok {
		return l.MaxApprovers()
	}
	return int(^uint(0) >> 1)
}

func (s *Server) approvalPrefix() string {
	if s.cfg.Replica.ID == "" {
		return ""
	}
	return s.cfg.Replica.ID + "-"
}

// approvalView is a pending approval as approvers see it: the model's
// arguments, the secure parameters by name only, the tool's description,
// the effective risk and why approval is needed; and, for an identity
// that may vote on it only, the conversation the call came from.
type approvalView struct {
	ID               string           `json:"id"`
	SessionID        string           `json:"sessionId"`
	CallID           string           `json:"callId"`
	Requester        string           `json:"requester"`
	RequestedBy      string           `json:"requestedBy"`
	Server           string           `json:"server"`
	Tool             string           `json:"tool"`
	Description      string           `json:"description"`
	Arguments        json.RawMessage  `json:"arguments"`
	SecureParams     []string         `json:"secureParams"`
	Risk             risk.Effective   `json:"risk"`
	Rules            []string         `json:"rules"`
	Reason           string           `json:"reason"`
	Message          string           `json:"message"`
	Unclassified     bool             `json:"unclassified"`
	Hints            []string         `json:"hints"`
	Needed           int              `json:"needed"`
	Votes            []approvals.Vote `json:"votes"`
	SessionGrantable bool             `json:"sessionGrantable"`
	// MayVote: the identity reading the view may vote on the request
	// (approvals.Request.MayVote); Conversation is given to it only, nil
	// (null) otherwise and for calls made outside a model turn.
	MayVote      bool                    `json:"mayVote"`
	Conversation *approvals.Conversation `json:"conversation"`
	CreatedAt    time.Time               `json:"createdAt"`
	Deadline     *time.Time              `json:"deadline"`
	// State is pending, approved, rejected or expired.
	State     approvals.State `json:"state"`
	SettledAt *time.Time      `json:"settledAt"`
}

// approvalView renders a for viewer (nil: no identity, as for webhooks,
// which then get no conversation).
func (s *Server) approvalView(a approvals.Approval, viewer *auth.Identity) approvalView {
	a = a.View(time.Now())
	p := a.Pending
	req := p.Request
	v := approvalView{
		State: a.State,
		ID:    p.ID, SessionID: req.SessionID, CallID: req.CallID, Requester: req.Requester, RequestedBy: req.RequestedBy,
		Server: req.Server, Tool: req.Tool, Arguments: req.Arguments, SecureParams: []string{},
		Risk: req.Risk, Rules: nonNil(req.Rules), Reason: req.Reason, Message: req.Message,
		Unclassified: req.Unclassified, Hints: nonNil(req.Hints), Needed: p.Needed, Votes: p.Votes,
		SessionGrantable: req.SessionGrantable, CreatedAt: p.Created.UTC(),
	}
	if len(v.Arguments) == 0 || !json.Valid(v.Arguments) {
		v.Arguments = json.RawMessage(`{}`)
	}
	if v.Votes == nil {
		v.Votes = []approvals.Vote{}
	}
	if v.Risk.SideEffects == nil {
		v.Risk.SideEffects = []string{}
	}
	if !req.Deadline.IsZero() {
		d := req.Deadline.UTC()
		v.Deadline = &d
	}
	if !a.Settled.IsZero() {
		t := a.Settled.UTC()
		v.SettledAt = &t
	}
	if snap := s.host.Server(req.Server); snap != nil {
		if ct := snap.Tool(req.Tool); ct != nil && ct.Tool != nil {
			v.SecureParams = nonNil(ct.Tool.SecureParams)
			v.Description = ct.Tool.Description
		}
	}
	if viewer != nil && req.MayVote(viewer.Name) {
		v.MayVote = true
		if c := req.Conversation; c != (approvals.Conversation{}) {
			v.Conversation = &c
		}
	}
	// Every text passes the redactor: a server may have planted a
	// protected value in a definition the request quotes.
	red := s.host.Redactor()
	if args := red.Redact(string(v.Arguments)); args != string(v.Arguments) {
		v.Arguments = json.RawMessage(args)
		if !json.Valid(v.Arguments) {
			v.Arguments = json.RawMessage(`{}`)
		}
	}
	v.Reason, v.Message, v.Description = red.Redact(v.Reason), red.Redact(v.Message), red.Redact(v.Description)
	if c := v.Conversation; c != nil {
		c.UserMessage, c.ModelText = red.Redact(c.UserMessage), red.Redact(c.ModelText)
	}
	for i := range v.Hints {
		v.Hints[i] = red.Redact(v.Hints[i])
	}
	return v
}

func nonNil(s []string) []string {
	if len(s) == 0 {
		return []string{} // an empty list read from a store is [] too, never null
	}
	return slices.Clone(s)
}

type approvalList struct {
	// Approver is the identity the list was read as (who is signed in).
	Approver  string         `json:"approver"`
	Approvals []approvalView `json:"approvals"`
}

// listApprovals lists the open requests: of the shared store, or of this
// replica and its peers.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) {
	list, err := s.store.List(r.Context(), approvals.ListOptions{})
	if err != nil {
		s.logger.Error("serve: listing approvals failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the approvals store cannot be read")
		return
	}
	who := auth.IdentityOf(r.Context())
	out := approvalList{Approver: who.Name, Approvals: []approvalView{}}
	now := time.Now()
	for i := range list {
		if list[i].Open(now) {
			out.Approvals = append(out.Approvals, s.approvalView(list[i], who))
		}
	}
	if !s.shared && r.Header.Get(forwardedHeader) == "" {
		out.Approvals = append(out.Approvals, s.peerApprovals(r)...)
	}
	writeJSON(w, http.StatusOK, out)
}

// getApproval shows one request, pending or settled (while the store
// remembers it).
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) {
	a, err := s.store.Get(r.Context(), r.PathValue("approvalId"))
	switch {
	case errors.Is(err, approvals.ErrUnknownApproval):
		writeError(w, http.StatusNotFound, "not_found", "no approval with this id")
		return
	case err != nil:
		s.logger.Error("serve: reading an approval failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the approvals store cannot be read")
		return
	}
	writeJSON(w, http.StatusOK, s.approvalView(a, auth.IdentityOf(r.Context())))
}

type voteRequest struct {
	Decision   string `json:"decision"`
	Note       string `json:"note"`
	ForSession bool   `json:"forSession"`
}

type voteResult struct {
	ApprovalID string `json:"approvalId"`
	Approver   string `json:"approver"`
	Decision   string `json:"decision"`
	Counted    bool   `json:"counted"`
	Settled    bool   `json:"settled"`
}

// vote casts the caller's vote. The approver is the authenticated
// identity, never a name in the body: the audit record attributes the
// vote to it, and the quorum counts distinct identities.
func (s *Server) vote(w http.ResponseWriter, r *http.Request) {
	var req voteRequest
	if !readJSON(w, r, &req) {
		return
	}
	if req.Decision != "allow" && req.Decision != "deny" {
		writeError(w, http.StatusBadRequest, "invalid_request", `decision must be "allow" or "deny"`)
		return
	}
	if len(req.Note) > 1000 {
		writeError(w, http.StatusBadRequest, "invalid_request", "note must be at most 1000 bytes")
		return
	}
	id := r.PathValue("approvalId")
	who := auth.IdentityOf(r.Context())
	a, err := s.store.Vote(r.Context(), id, approvals.Resolution{ApproverID: who.Name, Allow: req.Decision == "allow", ForSession: req.ForSession, Note: req.Note})
	switch {
	case err == nil:
	case errors.Is(err, approvals.ErrUnknownApproval):
		writeError(w, http.StatusNotFound, "not_found", "no pending approval with this id")
		return
	case errors.Is(err, approvals.ErrAlreadyResolved):
		writeError(w, http.StatusConflict, "already_resolved", "the approval was already settled; the vote changes nothing")
		return
	case errors.Is(err, approvals.ErrDuplicateVote):
		writeError(w, http.StatusConflict, "duplicate_vote", "this approver already allowed this request; a second allow does not count again")
		return
	case errors.Is(err, approvals.ErrSelfApproval):
		writeError(w, http.StatusForbidden, "self_approval", "the requester cannot approve its own call: neither the session's subject nor the API identity that started the turn may vote on it")
		return
	case errors.Is(err, approvals.ErrSessionGrant):
		writeError(w, http.StatusBadRequest, "invalid_request", "forSession is not available for this request (it needs two or more approvers, or the tool is unclassified)")
		return
	case errors.Is(err, approvals.ErrNoApproverID):
		writeError(w, http.StatusBadRequest, "invalid_request", "the vote cannot count")
		return
	default:
		s.logger.Error("serve: recording a vote failed", "error", err)
		writeError(w, http.StatusServiceUnavailable, "unavailable", "the vote could not be recorded; try again")
		return
	}
	settled := a.State != approvals.StatePending
	if settled && s.shared {
		s.watch.publish("settled", id) // a memory store says so itself
	}
	writeJSON(w, http.StatusOK, voteResult{ApprovalID: id, Approver: who.Name, Decision: req.Decision, Counted: true, Settled: settled})
}

// approvalEvents streams "pending" and "settled" events (data: the
// approval id) so the approvals page updates when anyone decides.
func (s *Server) approvalEvents(w http.ResponseWriter, r *http.Request) {
	ch, stop, err := s.watch.subscribe(auth.IdentityOf(r.Context()).Name)
	if err != nil {
		writeError(w, http.StatusTooManyRequests, "too_many_streams", err.Error())
		return
	}
	defer stop()
	sw := sse.Start(w, r, http.StatusOK)
	_ = sw.Comment("approvals")
	if sw.Flush() != nil {
		return
	}
	keepAlive := time.NewTicker(25 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				return
			}
			data, _ := json.Marshal(map[string]string{"type": ev.typ, "id": ev.id})
			if sw.Event(0, ev.typ, data) != nil || sw.Flush() != nil {
				return
			}
		case <-keepAlive.C:
			if sw.Comment("keep-alive") != nil || sw.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// storePoll is how often a replica on a shared store looks for requests
// raised or settled by others, for the approvals page's live updates.
const storePoll = 2 * time.Second

// watchStore publishes "changed" whenever the set of open requests in the
// shared store differs from the last look (another replica raised or
// settled one), until ctx ends.
func (s *Server) watchStore(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		list, err := s.store.List(ctx, approvals.ListOptions{})
		if err != nil {
			continue
		}
		var b strings.Builder
		now := time.Now()
		for i := range list {
			if list[i].Open(now) {
				b.WriteString(list[i].ID)
				b.WriteByte(' ')
			}
		}
		if sig := b.String(); sig != last {
			last = sig
			s.watch.publish("changed", "")
		}
	}
}
