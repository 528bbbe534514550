package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// unclassifiedHost serves riskTools with no approvals section but the
// given mode: every tool the server does not classify fully is unclassified.
func unclassifiedHost(t *testing.T, mode string, approver approvals.Approver, sink auditlog.Sink) (*Host, *mcptest.Server) {
	t.Helper()
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(riskTools)})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP}},
		Approvals:  rules.Config{Unclassified: mode},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Config: cfg, Approver: approver, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, srv
}

func TestUnclassifiedToolsAreOfferedAndAskEveryCall(t *testing.T) {
	var asked []*approvals.Request
	approver := approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
		asked = append(asked, req)
		// Asks for the whole session: an unclassified tool never gets it.
		return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, ForSession: true, TS: time.Now()}}}, nil
	})
	sink := &recordSink{}
	h, srv := unclassifiedHost(t, "", approver, sink) // the default: ask
	h.Connect(context.Background())
	s := h.NewSession(SessionOptions{Subject: "bob", TrustLevel: 1})

	// Offered at trust level 1, although the bucket says minTrustLevel 5.
	for _, tv := range s.View(context.Background()).Tools["shop"] {
		if tv.Status != ToolActive {
			t.Errorf("%s is %s (%s); unclassified tools are offered", tv.Tool.Name, tv.Status, tv.Reason)
		}
	}
	for i := range 2 {
		if _, err := s.CallTool(context.Background(), "shop", "mystery", json.RawMessage(`{}`)); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if len(asked) != 2 {
		t.Fatalf("asked %d times for two calls; an unclassified tool is never granted for the session", len(asked))
	}
	req := asked[0]
	if !req.Unclassified || req.SessionGrantable || req.Approvers != 1 || !strings.Contains(req.Reason, "unclassified") {
		t.Errorf("request: unclassified %v, grantable %v, approvers %d, reason %q", req.Unclassified, req.SessionGrantable, req.Approvers, req.Reason)
	}
	if req.Risk.Category != risk.CategoryDestroy || req.Risk.MinTrustLevel != 5 {
		t.Errorf("the risk shown and audited is not the fail-closed bucket: %+v", req.Risk)
	}
	rec := sink.last(t)
	if rec.Outcome != rules.OutcomeApproved || !rec.Risk.Unclassified {
		t.Errorf("audit: outcome %s, risk %+v", rec.Outcome, rec.Risk)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 2 {
		t.Errorf("%d calls reached the server, want 2", n)
	}
}

func TestUnclassifiedWithNobodyToAskIsDeniedNamingTheFix(t *testing.T) {
	sink := &recordSink{}
	h, srv := unclassifiedHost(t, "ask", nil, sink) // a library session without an approver
	s := h.NewSession(SessionOptions{TrustLevel: 1})
	_, err := s.CallTool(context.Background(), "shop", "mystery", json.RawMessage(`{}`))
	var he *Error
	if !errors.As(err, &he) || he.Kind != KindDenied {
		t.Fatalf("err = %v, want a denial", err)
	}
	for _, want := range []string{"unclassified", "agenthost policy init", "approvals.unclassified"} {
		if !strings.Contains(he.Message, want) {
			t.Errorf("the denial does not name %q: %s", want, he.Message)
		}
	}
	if strings.Contains(he.ModelMessage, "policy init") {
		t.Errorf("the model is told operator details: %s", he.ModelMessage)
	}
	if rec := sink.last(t); rec.Outcome != rules.OutcomeRejected {
		t.Errorf("audit outcome %s", rec.Outcome)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 0 {
		t.Errorf("%d calls reached the server", n)
	}
}

func TestStrictKeepsTheFailClosedBucket(t *testing.T) {
	h, _ := unclassifiedHost(t, "strict", approvals.Auto{}, &recordSink{})
	h.Connect(context.Background())
	s := h.NewSession(SessionOptions{TrustLevel: 1})
	for _, tv := range s.View(context.Background()).Tools["shop"] {
		if tv.Tool.Name == "mystery" && (tv.Status != ToolHidden || !strings.Contains(tv.Reason, "trust level 5")) {
			t.Errorf("strict: mystery is %s (%s), want hidden for trust level 5", tv.Status, tv.Reason)
		}
	}
	_, err := s.CallTool(context.Background(), "shop", "mystery", json.RawMessage(`{}`))
	if KindOf(err) != KindUnavailable && KindOf(err) != KindDenied {
		t.Errorf("strict: a call to a hidden unclassified tool: %v", err)
	}
}
