package approvals

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// Gate turns a policy decision into a final outcome for one session: it
// consults the session's denial memory and grants, asks the approver, and
// checks the quorum itself (an approver's word alone is not trusted to
// count distinct approvers). Build one Gate per session; the Policy and
// Approver may be shared between sessions. Safe for concurrent use.
type Gate struct {
	policy   *rules.Policy
	approver Approver
	grants   *sessionGrants
	shared   GrantStore
	denials  *denialMemory
	now      func() time.Time
}

// GateConfig configures a Gate.
type GateConfig struct {
	Policy *rules.Policy // required
	// Approver answers asks; nil means Deny (nobody to ask).
	Approver Approver
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Grants, if set, keeps the session's grants where every replica of
	// the session sees them (a Store); nil keeps them in this Gate.
	Grants GrantStore
}

// NewGate returns a Gate for one session.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.Policy == nil {
		return nil, errors.New("approvals: NewGate needs a Policy")
	}
	g := &Gate{policy: cfg.Policy, approver: cfg.Approver, grants: newSessionGrants(), denials: newDenialMemory(0), now: cfg.Now, shared: cfg.Grants}
	if g.approver == nil {
		g.approver = Deny{}
	}
	if g.now == nil {
		g.now = time.Now
	}
	return g, nil
}

// Check is one call to gate.
type Check struct {
	SessionID string
	// Subject is the user or tenant the session acts for; it cannot
	// approve its own calls.
	Subject string
	CallID  string
	Call    rules.Call
	// Risk is the tool's effective metadata (Policy.Effective).
	Risk risk.Effective
	// ToolDefHash identifies the tool definition (ToolInfo.DefinitionHash);
	// grants and remembered denials are tied to it.
	ToolDefHash string
	// ExposedName and SecureParams (names only) are carried into the audit
	// record; the Gate does not use them.
	ExposedName  string
	SecureParams []string
	// RequestID, when set, is the id of the approval request an ask
	// raises (instead of a fresh one): a durable call's own id, so that the
	// call taken up again after a restart finds the request it raised, and
	// the votes cast meanwhile (see Request.Resumable).
	RequestID string
	// Conversation is carried into the request approvers see
	// (Request.Conversation); the Gate does not use it.
	Conversation Conversation
	// Asking, when set, is called with the request just before the
	// approver is asked (a frontend renders the question from it); it must
	// not block.
	Asking func(*Request)
}

// Result is the Gate's answer.
type Result struct {
	Decision rules.Decision
	Outcome  rules.Outcome
	// Reason is set when the call does not run.
	Reason rules.ReasonClass
	// Votes are every vote cast, in order, for the audit record.
	Votes []Vote
	// Note is the deciding deny note (approver's, or the denying rules'
	// message); ModelMessage already carries a sanitised copy.
	Note string
	// Remembered is set when an identical refused call was answered from
	// the session's denial memory without asking anyone.
	Remembered bool
	// RequestID is the approval request's id when approvers were asked.
	RequestID string
	// ModelMessage is the tool result text for the model when the call
	// does not run; empty when it runs.
	ModelMessage string
	// Explanation is set when the Gate refused an ask without asking
	// anyone for a reason operators can fix (the only approver is the
	// requester); for operators, never shown to the model.
	Explanation string
}

// SelfApprovalExplanation says why an approver who is also the requester
// was not asked, and what to change.
func SelfApprovalExplanation(approverID string) string {
	return fmt.Sprintf("approval needed, but the only approver %q is the session's subject (the requester), who cannot approve its own calls, so nobody was asked; "+
		"run with another approver, or with a subject other than the approver", approverID)
}

// unclassifiedExplanation says why a call to an unclassified tool was
// denied where nobody can be asked, and how to fix it.
const unclassifiedExplanation = "the tool is unclassified, so every call to it asks a person, and nobody can be asked here " +
	"(no terminal, --approve deny, or no approver in this session); classify the tool (`agenthost policy init` writes a catalogue to review), " +
	"answer asks (--approve prompt or wait), or change approvals.unclassified (docs/config.md)"

// Allowed reports whether the call may run.
func (r Result) Allowed() bool { return r.Outcome.Allowed() }

// Check decides one call. It returns an error only when the call cannot be
// decided: ctx ended while approvers were being asked, or the approver
// failed. The Result then has outcome "error" and must still be audited;
// the call does not run.
func (g *Gate) Check(ctx context.Context, c Check) (Result, error) {
	if c.Call.SessionID == "" {
		c.Call.SessionID = c.SessionID
	}
	if c.Call.Subject == "" {
		c.Call.Subject = c.Subject
	}
	if c.Call.Now.IsZero() && g.policy.UsesExpressions() {
		c.Call.Now = g.now()
	}
	d := g.policy.DecideContext(ctx, c.Risk, c.Call)
	res := Result{Decision: d, Outcome: d.Outcome}
	switch d.Action {
	case rules.ActionAllow:
		return res, nil
	case rules.ActionDeny:
		res.Reason = d.ReasonClass
		if d.ReasonClass == rules.ReasonPolicy {
			res.Note = d.Message
		}
		res.ModelMessage = ModelMessage(res.Outcome, res.Reason, res.Note)
		return res, nil
	}

	denial := keyFor(c.Call.Server, c.Call.Tool, c.ToolDefHash, c.Call.Args)
	if prior, ok := g.denials.Lookup(denial); ok {
		res.Outcome, res.Reason, res.Note, res.Remembered = prior.Outcome, prior.Reason, prior.Note, true
		res.ModelMessage = ModelMessage(res.Outcome, res.Reason, res.Note)
		return res, nil
	}
	grantable := d.Approvers < 2 && c.ToolDefHash != "" && !d.Unclassified && !d.Tightened
	if grantable && g.granted(ctx, c, d.Risk) {
		res.Outcome = rules.OutcomeGranted
		return res, nil
	}
	if l, ok := g.approver.(Limited); ok && l.MaxApprovers() < d.Approvers {
		res = g.refuse(denial, res, rules.OutcomeRejected, rules.ReasonNoApprover, "")
		if d.Unclassified && l.MaxApprovers() == 0 {
			res.Explanation = unclassifiedExplanation
		}
		return res, nil
	}
	if ia, ok := g.approver.(Identified); ok && ids.SameID(ia.ApproverID(), c.Subject) {
		// Asking would be a question whose yes is discarded.
		// Not remembered as a denial: a retry gets the same explanation.
		res.Outcome, res.Reason = rules.OutcomeRejected, rules.ReasonNoApprover
		res.Explanation = SelfApprovalExplanation(ia.ApproverID())
		res.ModelMessage = ModelMessage(res.Outcome, res.Reason, "")
		return res, nil
	}

	now := g.now()
	id := c.RequestID
	if id == "" {
		id = newID("apr_")
	}
	req := &Request{
		ID:               id,
		Resumable:        c.RequestID != "",
		SessionID:        c.SessionID,
		CallID:           c.CallID,
		Requester:        c.Subject,
		Server:           c.Call.Server,
		Tool:             c.Call.Tool,
		Arguments:        slices.Clone(c.Call.Args),
		Risk:             d.Risk.Clone(),
		Rules:            slices.Clone(d.Rules),
		Message:          d.Message,
		Reason:           d.Reason,
		Approvers:        d.Approvers,
		Deadline:         now.Add(d.Timeout),
		SessionGrantable: grantable,
		Unclassified:     d.Unclassified,
		Hints:            slices.Clone(d.Risk.Hints),
		Conversation:     c.Conversation,
	}
	res.RequestID = req.ID
	if c.Asking != nil {
		c.Asking(req)
	}
	actx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	v, err := g.approver.Approve(actx, req)
	res.Votes = slices.Clone(v.Votes)
	switch {
	case err != nil && ctx.Err() != nil:
		res.Outcome, res.Reason = rules.OutcomeError, rules.ReasonError
		res.ModelMessage = ModelMessage(res.Outcome, res.Reason, "")
		return res, fmt.Errorf("approval of %s/%s: %w", c.Call.Server, c.Call.Tool, ctx.Err())
	case err != nil && errors.Is(actx.Err(), context.DeadlineExceeded):
		v.Expired = true
	case err != nil:
		res.Outcome, res.Reason = rules.OutcomeError, rules.ReasonError
		res.ModelMessage = ModelMessage(res.Outcome, res.Reason, "")
		return res, fmt.Errorf("approval of %s/%s: %w", c.Call.Server, c.Call.Tool, err)
	}

	// Distinct approvers are counted by normalised id ("bob", "Bob" and
	// fullwidth "ｂｏｂ" are one person); an id that is not valid ("bob\u200b")
	// and the requester, however her id is spelled, never count.
	allowed := map[string]bool{}
	forSession := false
	var veto *Vote
	for i := range v.Votes {
		vote := &v.Votes[i]
		switch vote.Decision {
		case VoteDeny:
			if veto == nil {
				veto = vote
			}
		case VoteAllow:
			if id, err := voterKey(vote.ApproverID, c.Subject); err == nil {
				allowed[id] = true
				forSession = forSession || vote.ForSession
			}
		}
	}
	switch {
	case veto != nil:
		return g.refuse(denial, res, rules.OutcomeRejected, rules.ReasonDeclined, veto.Note), nil
	case len(allowed) >= d.Approvers:
		res.Outcome = rules.OutcomeApproved
		if forSession && req.SessionGrantable {
			// Grant refuses what it must (multi-approver tools); the call
			// itself is approved either way.
			g.grant(ctx, c, d.Approvers, d.Risk)
		}
		return res, nil
	case v.Expired:
		return g.refuse(denial, res, rules.OutcomeExpired, rules.ReasonTimeout, ""), nil
	}
	return g.refuse(denial, res, rules.OutcomeRejected, rules.ReasonNoApprover, ""), nil
}

// refuse settles a refused ask and remembers it for identical retries.
func (g *Gate) refuse(denial denialKey, res Result, o rules.Outcome, reason rules.ReasonClass, note string) Result {
	res.Outcome, res.Reason, res.Note = o, reason, note
	res.ModelMessage = ModelMessage(o, reason, note)
	g.denials.Remember(denial, deniedCall{Outcome: o, Reason: reason, Note: note})
	return res
}

// granted reports whether a session grant covers the call; a shared grant
// store that cannot be read counts as no grant (the call is asked).
func (g *Gate) granted(ctx context.Context, c Check, risk risk.Effective) bool {
	if g.shared == nil {
		return g.grants.Allowed(c.Call.Server, c.Call.Tool, c.ToolDefHash, risk)
	}
	gr, ok, err := g.shared.GetGrant(ctx, c.SessionID, c.Call.Server, c.Call.Tool)
	if err != nil || !ok {
		return false
	}
	if gr.DefHash != c.ToolDefHash {
		_ = g.shared.RevokeGrant(ctx, c.SessionID, c.Call.Server, c.Call.Tool) // void: the definition changed
		return false
	}
	return riskWithin(risk, gr.Ceiling)
}

// grant remembers an "allow for this session" answer; it refuses what it
// must (multi-approver tools, no definition hash). A shared store that
// cannot be written only means the next call asks again.
func (g *Gate) grant(ctx context.Context, c Check, approvers int, risk risk.Effective) {
	if g.shared == nil {
		_ = g.grants.Grant(c.Call.Server, c.Call.Tool, c.ToolDefHash, approvers, risk)
		return
	}
	if approvers >= 2 || c.ToolDefHash == "" {
		return
	}
	_ = g.shared.PutGrant(ctx, c.SessionID, Grant{Server: c.Call.Server, Tool: c.Call.Tool, DefHash: c.ToolDefHash, Ceiling: risk.Normalize(), Created: g.now().UTC()})
}
