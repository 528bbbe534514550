// Package permhook owns the PermissionRequest hooks' part in an approval:
// each hook votes as its configured identity in front of the session's
// approver, and never approves alone.
package permhook

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/hooks"
)

// permissionApprover puts the PermissionRequest hooks in front of a
// session's approver: each hook votes as its configured identity, counted
// like any other approver by the Gate, and a hook's deny (or failure)
// vetoes the request without asking anyone. A hook's allow is never
// enough on its own: the approver behind is always asked for at least one
// vote, and hook allows are dropped from the verdict when nobody else
// allowed.
type permissionApprover struct {
	hooks  *hooks.Runner
	logger *slog.Logger
	inner  approvals.Approver
	ids    int // distinct hook identities
}

// identifiedPermissionApprover keeps the inner approver's identity (the
// Gate does not ask a person about her own calls).
type identifiedPermissionApprover struct {
	*permissionApprover
	id string
}

func (a identifiedPermissionApprover) ApproverID() string { return a.id }

// Wrap puts runner's PermissionRequest hooks (configured as cfg) in front
// of approver; approver itself when none are configured.
func Wrap(runner *hooks.Runner, cfg hooks.Config, logger *slog.Logger, approver approvals.Approver) approvals.Approver {
	if !runner.HasPermission() {
		return approver
	}
	if approver == nil {
		approver = approvals.Deny{}
	}
	ids := map[string]bool{}
	for _, g := range cfg.PermissionRequest {
		for _, hk := range g.Hooks {
			ids[strings.ToLower(strings.TrimSpace(hk.Approver))] = true
		}
	}
	a := &permissionApprover{hooks: runner, logger: logger, inner: approver, ids: len(ids)}
	if ia, ok := approver.(approvals.Identified); ok {
		return identifiedPermissionApprover{permissionApprover: a, id: ia.ApproverID()}
	}
	return a
}

// MaxApprovers is what the approver behind can supply plus the hook
// identities, and 0 when it can supply nobody (hooks never approve alone).
func (a *permissionApprover) MaxApprovers() int {
	l, ok := a.inner.(approvals.Limited)
	switch {
	case !ok:
		return int(^uint(0) >> 1)
	case l.MaxApprovers() == 0:
		return 0
	}
	return l.MaxApprovers() + a.ids
}

// Approve runs the hooks, then asks the approver behind for the votes
// still needed (at least one).
func (a *permissionApprover) Approve(ctx context.Context, req *approvals.Request) (approvals.Verdict, error) {
	votes := a.hooks.Permission(ctx, hooks.Call{SessionID: req.SessionID, CallID: req.CallID, Server: req.Server, Tool: req.Tool,
		Arguments: req.Arguments, Approval: &hooks.Approval{ID: req.ID, Approvers: req.Approvers, Rules: req.Rules, Reason: req.Reason}})
	var hookVotes []approvals.Vote
	allows := 0
	for _, v := range votes {
		vote := approvals.Vote{ApproverID: v.Approver, TS: time.Now().UTC()}
		switch v.Decision {
		case hooks.DecisionAllow:
			vote.Decision = approvals.VoteAllow
			allows++
		case hooks.DecisionDeny:
			vote.Decision, vote.Note = approvals.VoteDeny, v.Reason
			if v.Failure != nil {
				a.logger.Error("a PermissionRequest hook failed; it votes deny", "server", req.Server, "tool", req.Tool, "approver", v.Approver, "err", v.Failure)
				vote.Note = ""
			}
		default:
			continue
		}
		hookVotes = append(hookVotes, vote)
		if vote.Decision == approvals.VoteDeny {
			return approvals.Verdict{Votes: hookVotes}, nil
		}
	}
	ask := *req
	ask.Approvers = max(1, req.Approvers-allows)
	v, err := a.inner.Approve(ctx, &ask)
	personAllowed := false
	for _, vote := range v.Votes {
		personAllowed = personAllowed || vote.Decision == approvals.VoteAllow
	}
	if personAllowed {
		v.Votes = append(hookVotes, v.Votes...)
	} else if allows > 0 {
		a.logger.Info("PermissionRequest hooks allowed, but nobody else did; their votes do not count alone", "server", req.Server, "tool", req.Tool)
	}
	return v, err
}
