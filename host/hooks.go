package host

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/results"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Hooks (package hooks) run at two points of a call: the PreToolUse hooks
// after the argument checks and before the approval workflow, whose
// decision they can only tighten (Call.Tighten); the PostToolUse hooks
// after the server's result was redacted and before it is audited and
// returned, where they may withhold or replace what the model sees. Hooks
// never see secure values: they run before the values are resolved, and
// after the result was redacted.

// newHookRunner compiles the configured hooks; nil when there are none.
// With a supervisor, every hook runs under it (hooks.Options.Supervisor).
func newHookRunner(cfg hooks.Config, file string, supervisor *childproc.Supervisor) (*hooks.Runner, error) {
	if cfg.Empty() {
		return nil, nil
	}
	dir := ""
	if file != "" {
		dir = filepath.Dir(file)
	}
	return hooks.New(cfg, hooks.Options{Dir: dir, Supervisor: supervisor})
}

// hookCall is what hooks are told of a call.
func (s *Session) hookCall(c *call) hooks.Call {
	return hooks.Call{SessionID: s.id, CallID: c.info.id, Server: c.server, Tool: c.ct.Tool.Name,
		Arguments: c.arguments, SecureParams: c.ct.Tool.SecureParams}
}

// hookRule is the audit rule id of a hook ("hook:<id>", with a suffix
// saying what happened when it is not a decision).
func hookRule(id, what string) string {
	if what == "" {
		return "hook:" + id
	}
	return "hook:" + id + ":" + what
}

// preHookStage asks the PreToolUse hooks for their word on the call's
// decision (c.tighten), which the gate reads.
type preHookStage struct{ next stage }

func (st preHookStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	if h := c.s.host; h.hooks.HasPre() {
		v := h.hooks.Pre(ctx, c.s.hookCall(c))
		c.tighten = c.s.tighten(c, v)
	}
	return st.next.serve(ctx, c)
}

// tighten is how the PreToolUse hooks' verdict tightens the call's
// decision. A failed hook denies, and the model is not told why.
func (s *Session) tighten(c *call, v hooks.PreVerdict) *callTighten {
	tighten := &callTighten{context: v.Context}
	switch {
	case v.Failure != nil:
		what := "failed"
		if errors.Is(v.Failure, hooks.ErrTimeout) {
			what = "timeout"
		}
		s.host.logger.Error("a PreToolUse hook failed; the call is denied", "server", c.server, "tool", c.ct.Tool.Name, "session", s.id, "err", v.Failure)
		tighten.action, tighten.by = rules.ActionDeny, hookRule(v.By, what)
	case v.Decision == hooks.DecisionDeny:
		tighten.action, tighten.by, tighten.message = rules.ActionDeny, hookRule(v.By, ""), v.Reason
	case v.Decision == hooks.DecisionAsk:
		tighten.action, tighten.by, tighten.message = rules.ActionAsk, hookRule(v.By, ""), v.Reason
	}
	return tighten
}

// callTighten is the PreToolUse hooks' word on a call.
type callTighten struct {
	action  rules.Action
	by      string
	message string
	context []string // additionalContext, added to the result the model sees
}

// postHookStage runs the PostToolUse hooks on the redacted result: what
// they leave, with the PreToolUse hooks' additionalContext, is what the
// model gets, and the result record says what they did (c.hookRule).
type postHookStage struct{ next stage }

func (st postHookStage) serve(ctx context.Context, c *call) (*CallResult, error) {
	out, err := st.next.serve(ctx, c)
	if err != nil || out == nil {
		return out, err
	}
	var v *hooks.PostVerdict
	if h := c.s.host; h.hooks.HasPost() && out.Result != nil {
		raw, err := json.Marshal(out.Result)
		if err != nil {
			raw = []byte(`null`)
		}
		pv := h.hooks.Post(ctx, c.s.hookCall(c), raw)
		v = &pv
	}
	out.Result, c.hookRule = c.s.postHooked(c, out.Result, v)
	return out, nil
}

// postHooked is what the model is to see of a result (already redacted)
// after the PostToolUse hooks' verdict v (nil: none ran), with the audit
// rule saying what a hook did ("" when no hook changed anything).
func (s *Session) postHooked(c *call, r *mcp.CallToolResult, v *hooks.PostVerdict) (*mcp.CallToolResult, string) {
	h := s.host
	rule := ""
	var extra []string
	if c.tighten != nil {
		extra = c.tighten.context
	}
	if v != nil {
		extra = append(slices.Clip(extra), v.Context...)
		switch {
		case v.Failure != nil:
			h.logger.Error("a PostToolUse hook failed; the result is withheld from the model", "server", c.server, "tool", c.ct.Tool.Name, "session", s.id, "err", v.Failure)
			r, rule = results.WithheldByHook(""), hookRule(v.By, "failed")
		case v.Withheld:
			r, rule = results.WithheldByHook(v.Reason), hookRule(v.By, "withheld")
		case v.Replaced != nil:
			r, rule = results.Redact(h.redactor, results.Replaced(v.Replaced, r.IsError)), hookRule(v.By, "replaced")
		}
	}
	if len(extra) > 0 && r != nil {
		out := *r
		out.Content = slices.Clip(out.Content)
		for _, c := range extra {
			out.Content = append(out.Content, mcp.NewTextContent(h.redactor.Redact(c)))
		}
		r = &out
	}
	return r, rule
}

// permissionApprover puts the PermissionRequest hooks in front of a
// session's approver: each hook votes as its configured identity, counted
// like any other approver by the Gate, and a hook's deny (or failure)
// vetoes the request without asking anyone. A hook's allow is never
// enough on its own: the approver behind is always asked for at least one
// vote, and hook allows are dropped from the verdict when nobody else
// allowed.
type permissionApprover struct {
	host  *Host
	inner approvals.Approver
	ids   int // distinct hook identities
}

// identifiedPermissionApprover keeps the inner approver's identity (the
// Gate does not ask a person about her own calls).
type identifiedPermissionApprover struct {
	*permissionApprover
	id string
}

func (a identifiedPermissionApprover) ApproverID() string { return a.id }

// withPermissionHooks wraps approver when PermissionRequest hooks are
// configured.
func (h *Host) withPermissionHooks(approver approvals.Approver) approvals.Approver {
	if !h.hooks.HasPermission() {
		return approver
	}
	if approver == nil {
		approver = approvals.Deny{}
	}
	ids := map[string]bool{}
	for _, g := range h.cfg.Hooks.PermissionRequest {
		for _, hk := range g.Hooks {
			ids[strings.ToLower(strings.TrimSpace(hk.Approver))] = true
		}
	}
	a := &permissionApprover{host: h, inner: approver, ids: len(ids)}
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
	h := a.host
	votes := h.hooks.Permission(ctx, hooks.Call{SessionID: req.SessionID, CallID: req.CallID, Server: req.Server, Tool: req.Tool,
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
				h.logger.Error("a PermissionRequest hook failed; it votes deny", "server", req.Server, "tool", req.Tool, "approver", v.Approver, "err", v.Failure)
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
		h.logger.Info("PermissionRequest hooks allowed, but nobody else did; their votes do not count alone", "server", req.Server, "tool", req.Tool)
	}
	return v, err
}
