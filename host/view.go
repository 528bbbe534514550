package host

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/host/internal/views"
)

// The session views and the catalog report are built in
// host/internal/views and re-exported here: they are part of the host's
// API.

// ToolView is one tool as a session sees it: the catalog entry plus the
// session's verdict (a valid tool may still be hidden from this session).
type ToolView = views.ToolView

// SessionView is the tool view of a session over every connected server.
type SessionView = views.SessionView

// ViewSummary counts a session's tools by status, with the most common
// reason a tool is not offered.
type ViewSummary = views.ViewSummary

// CatalogReport is the `tools --json` document (docs/cli.md): every key is
// always present, null or empty when unknown.
type CatalogReport = views.CatalogReport

// ServerReport is one server in a CatalogReport.
type ServerReport = views.ServerReport

// ToolReport is one tool in a CatalogReport. InputSchema is exactly what the
// model is sent; secure parameters appear by name only.
type ToolReport = views.ToolReport

// View computes what this session may be offered. A tool whose required
// secure parameters cannot be bound in this session, or that the session
// can never be allowed to call, is hidden (with a reason) rather than shown
// and failing. Work is per server and cached (see [views.Cache.View]).
func (s *Session) View(ctx context.Context) *SessionView {
	ctx = s.bindingContext(ctx)
	h := s.host
	servers := h.Servers()
	taints := h.taint.Sync(servers)
	return s.views.View(ctx, &h.views, servers, taints, s.valuesEpoch.Load(), views.Checks{
		Key: s.verdictKey, Binder: h.binder, NeverAllowed: s.neverAllowed,
	})
}

// verdictKey is everything about the session its verdicts depend on.
func (s *Session) verdictKey() views.Key {
	s.mu.RLock()
	names := make([]string, 0, len(s.values))
	for name, v := range s.values {
		if v != "" {
			names = append(names, name)
		}
	}
	s.mu.RUnlock()
	return views.NewKey(s.trustLevel, names)
}

// Report builds the catalog report for this session; server limits it to
// one server when not empty.
func (s *Session) Report(ctx context.Context, server string) *CatalogReport {
	h := s.host
	return views.Report(s.View(ctx), server, h.redactor, func(snap *ServerSnapshot, tv *ToolView, tr *ToolReport) {
		if tv.Status != ToolExcluded {
			views.Decorate(h.policy, h.effective(snap.Name, tv.CatalogTool), s.policyCall(snap.Name, tv.Tool.Name, json.RawMessage("{}")), tr)
		}
	})
}
