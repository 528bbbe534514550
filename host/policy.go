package host

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/asks"
	"github.com/agenthost/agenthost/host/internal/hosterr"
	"github.com/agenthost/agenthost/host/internal/pinstate"
	"github.com/agenthost/agenthost/host/internal/verdicts"
	"github.com/agenthost/agenthost/host/internal/views"
)

// trusted reports whether the operator takes the server's declared risk
// metadata as-is.
func (h *Host) trusted(server string) bool {
	sc, ok := h.cfg.MCPServers[server]
	return ok && sc.TrustAnnotations
}

// effective is the tool's effective risk metadata, computed once per parsed
// definition.
func (h *Host) effective(server string, ct *CatalogTool) risk.Effective {
	return verdicts.Effective(h.policy, server, h.trusted(server), ct)
}

// Explain runs the whole approval chain for a hypothetical call, without
// asking anyone: raw declared, inferred, catalogue, normalised, rules,
// decision.
func (s *Session) Explain(ctx context.Context, server, tool string, args json.RawMessage) (*rules.Explanation, error) {
	c, ok := s.host.conns[server]
	if !ok {
		return nil, hosterr.New(KindConfig, hosterr.MsgNone, ErrUnknownServer, "unknown server %q", server)
	}
	ct, err := s.lookupTool(ctx, c, tool)
	if err != nil {
		return nil, err
	}
	x := s.host.policy.Explain(server, s.host.trusted(server), verdicts.ToolInfo(ct), s.policyCall(server, ct.Tool.Name, args))
	return &x, nil
}

// Catalogue infers a reviewable approvals catalogue for a server's tools.
func (h *Host) Catalogue(server string) []rules.CatalogueEntry {
	snap := h.Server(server)
	if snap == nil {
		return nil
	}
	return h.policy.Catalogue(server, views.ToolInfos(snap))
}

// neverAllowed reports tools this session can never call, whatever the
// arguments; they are left out of the model view.
func (s *Session) neverAllowed(server string, ct *CatalogTool) (bool, string) {
	h := s.host
	return verdicts.NeverAllowed(h.policy, server, ct, func() risk.Effective { return h.effective(server, ct) }, s.trustLevel)
}

// policyCall is a call as the approval rules see it. Rule expressions see
// the names of the session's values, never the values.
func (s *Session) policyCall(server, tool string, args json.RawMessage) rules.Call {
	c := rules.Call{Server: server, Tool: tool, Args: args, TrustLevel: s.trustLevel, SessionID: s.id, Subject: s.subject}
	if s.host.policy.UsesExpressions() {
		s.mu.RLock()
		c.SessionValues = make([]string, 0, len(s.values))
		for name := range s.values {
			c.SessionValues = append(c.SessionValues, name)
		}
		c.ResultLabels = slices.Clone(s.labels)
		s.mu.RUnlock()
		slices.Sort(c.SessionValues)
	}
	return c
}

// callCheck is the approval workflow's check of the call itself, as the
// gate and a task's question (package taskq) both start from it.
func (s *Session) callCheck(c *call) approvals.Check {
	call := s.policyCall(c.server, c.ct.Tool.Name, c.args)
	call.ArgsCheck = c.argsCheck
	return approvals.Check{
		SessionID:    s.id,
		Subject:      s.subject,
		CallID:       c.info.id,
		Call:         call,
		Risk:         s.host.effective(c.server, c.ct),
		ToolDefHash:  c.ct.Tool.DefHash(),
		ExposedName:  c.info.exposedName,
		SecureParams: c.ct.Tool.SecureParams,
		Conversation: c.info.conversation,
	}
}

// gateCheck is what the approval workflow is asked about the call. A
// sink that already failed refuses the call before anyone is asked to
// approve it (the decision record could not be written anyway).
func (s *Session) gateCheck(c *call) (approvals.Check, error) {
	h := s.host
	server, ct, args, info := c.server, c.ct, c.args, c.info
	check := s.callCheck(c)
	if dc := info.durable; dc != nil {
		check.RequestID = requestID(dc.Key, string(args), pinstate.Definition(ct).Hash(), h.policy.Revision())
	}
	if t := c.tighten; t != nil {
		check.Call.Tighten, check.Call.TightenBy, check.Call.TightenMessage = t.action, t.by, t.message
	}
	if fr, ok := h.audit.(auditlog.FailureReporter); ok {
		if err := fr.Err(); err != nil {
			return check, hosterr.New(KindInternal, hosterr.MsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, err),
				"%s/%s: refused: the audit log cannot be written: %v", server, ct.Tool.Name, err)
		}
	}
	if info.emit != nil {
		ask := info.ask(server, ct.Tool.Name, "")
		check.Asking = func(req *approvals.Request) { info.emit(asks.Requested(ask, req)) }
	}
	return check, nil
}

// emitNobodyAsked tells a turn about an ask nobody could answer, with the
// fix.
func (s *Session) emitNobodyAsked(c *call, res approvals.Result) {
	if c.info.emit == nil {
		return
	}
	if e, ok := asks.NobodyAsked(c.info.ask(c.server, c.ct.Tool.Name, ""), res); ok {
		c.info.emit(e)
	}
}

// gateAnswer is the decide stage's decision on the workflow's answer: nil
// lets the call on with its decision record (c.rec, c.decision); a denial
// is a *refusal; a detached wait (the process is going and the durable
// call resumes later) is neither audited nor refused, its request stays
// pending and its decision is recorded then.
func (s *Session) gateAnswer(c *call, check approvals.Check, res approvals.Result, gateErr error, detached bool) error {
	server, tool, info := c.server, c.ct.Tool.Name, c.info
	decision := &CallDecision{
		Decision:  string(res.Decision.Action),
		Outcome:   string(res.Outcome),
		Approvers: res.Decision.Approvers,
		Rules:     views.NonNil(res.Decision.Rules),
	}
	if info.emit != nil {
		info.emit(asks.Answered(info.ask(server, tool, ""), res))
	}
	rec := auditlog.NewRecord(check, res, time.Now())
	msg := hosterr.MsgFromApprovals(res.ModelMessage)
	switch {
	case detached:
		return hosterr.New(KindInternal, hosterr.MsgCancelled, gateErr, "%s/%s: approval wait detached", server, tool)
	case gateErr != nil:
		return &refusal{rec: rec, err: hosterr.New(KindDenied, msg, gateErr, "%s/%s: approval failed: %v", server, tool, gateErr)}
	case res.Allowed():
		c.rec, c.decision = rec, decision
		return nil
	case res.Explanation != "":
		return &refusal{rec: rec, err: hosterr.New(KindDenied, msg, ErrDenied, "%s/%s: %s: %s", server, tool, asks.OutcomeText(res), res.Explanation)}
	}
	return &refusal{rec: rec, err: hosterr.New(KindDenied, msg, ErrDenied, "%s/%s: %s (%s)", server, tool, asks.OutcomeText(res), res.Decision.Reason)}
}

// PlanInit proposes, for `agenthost policy init`, catalogue entries for
// the tools of the named servers (their current listing, excluded tools
// left out) that the configuration's catalogue lacks, and default rules
// when it has none. See [policyinit.PlanInit].
func (h *Host) PlanInit(servers []string) policyinit.InitPlan {
	list := make([]policyinit.InitServer, 0, len(servers))
	for _, name := range servers {
		snap := h.Server(name)
		if snap == nil {
			continue
		}
		list = append(list, policyinit.InitServer{Name: name, Tools: views.ToolInfos(snap)})
	}
	return policyinit.PlanInit(h.policy.Inferrer(), list, h.cfg.Approvals)
}

// auditRefused is the error of a call whose decision record could not be
// written: it is not sent.
func (h *Host) auditRefused(server, tool string, err error) error {
	h.logger.Error("audit write failed; the call was not sent", "server", server, "tool", tool, "err", err)
	return hosterr.New(KindInternal, hosterr.MsgOperatorFailure, fmt.Errorf("%w: %w", ErrAuditFailed, err),
		"%s/%s: refused, the call was not sent: its audit record could not be written: %v", server, tool, err)
}
