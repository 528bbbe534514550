package host

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// A policy that denies escalated calls denies them however the model
// spells the escalating key, and nothing reaches the server.
func TestEscalatedCallsAreDeniedInEverySpelling(t *testing.T) {
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(riskTools)})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"shop": {URL: url, Type: config.TransportHTTP, TrustAnnotations: true}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
			{ID: "escalated", When: rules.Match{RiskLevel: []string{"medium", "high", "critical"}}, Decide: "deny"},
			{ID: "wide", When: rules.Match{BlastRadius: []string{"cluster", "organization", "global"}}, Decide: "deny"},
		}},
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sink := &recordSink{}
	h, err := New(Options{Config: cfg, Audit: sink})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := h.NewSession(SessionOptions{TrustLevel: 5})
	if _, err := s.CallTool(context.Background(), "shop", "get_order", json.RawMessage(`{"id":1,"note":"force"}`)); err != nil {
		t.Fatalf("plain call: %v", err)
	}
	sent := len(srv.Recording().Messages("tools/call"))
	for _, args := range []string{
		`{"force":true}`,
		`{"\u0066orce":true}`,
		`{"c\u0061scade":true}`,
		`{"n\u0061mespace":"*"}`,
		`{"ns":"*"}`,
		`{"project":"*"}`,
		`{"filter":{"all\u005fNamespaces":"yes"}}`,
	} {
		_, err := s.CallTool(context.Background(), "shop", "get_order", json.RawMessage(args))
		if KindOf(err) != KindDenied || !errors.Is(err, ErrDenied) {
			t.Errorf("%s: err %v (kind %s), want denied", args, err, KindOf(err))
		}
		if rec := sink.last(t); rec.Outcome != rules.OutcomeDeniedByRule || string(rec.Arguments) != args {
			t.Errorf("%s: audit record outcome %s, arguments %s", args, rec.Outcome, rec.Arguments)
		}
	}
	if n := len(srv.Recording().Messages("tools/call")); n != sent {
		t.Errorf("%d escalated calls reached the server", n-sent)
	}
}
