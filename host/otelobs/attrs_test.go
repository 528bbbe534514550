package otelobs

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host"
)

const canary = "CANARY-attrs-8d8d"

// TestAttributesHoldNoFreeText: the attribute builders take names,
// outcomes and risk metadata, and leave out every free-text field the
// host's types carry (approver notes, messages for the model, operator
// explanations, inference notes and hints), which may quote arguments
// or values.
func TestAttributesHoldNoFreeText(t *testing.T) {
	res := approvals.Result{
		Decision: rules.Decision{Action: rules.ActionAsk, Approvers: 2, Rules: []string{"deletes"},
			Reason: canary, Risk: risk.Effective{Category: "delete", RiskLevel: "high", MinTrustLevel: 3,
				Hints: []string{canary}, Notes: []string{canary}, InferenceVersion: canary,
				Source: risk.Sources{Category: "catalogue", RiskLevel: "inferred"}}},
		Outcome:      rules.OutcomeApproved,
		Votes:        []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, Note: canary, TS: time.Now()}, {ApproverID: "bob", Decision: approvals.VoteAllow}},
		Note:         canary,
		ModelMessage: canary,
		Explanation:  canary,
		RequestID:    canary,
	}
	tests := []struct {
		name  string
		attrs []attribute.KeyValue
		want  map[string]string
	}{
		{"decision", decisionAttrs(host.DecisionInfo{Server: "db", Tool: "drop", Result: res, Wait: 1500 * time.Millisecond}),
			map[string]string{"agenthost.approval.decision": "ask", "agenthost.approval.outcome": "approved",
				"agenthost.approval.rules": "[deletes]", "agenthost.approval.approvers_required": "2",
				"agenthost.approval.votes": "[alice:allow bob:allow]", "agenthost.approval.wait_ms": "1500",
				"agenthost.risk.category": "delete", "agenthost.risk.category.source": "catalogue",
				"agenthost.risk.risk_level.source": "inferred", "agenthost.risk.min_trust_level": "3"}},
		{"credential", credentialAttrs(bindings.ResolveEvent{Source: "vault", Server: "db", Tool: "drop", Param: "token", Cache: bindings.CacheHit}),
			map[string]string{"agenthost.credential.source": "vault", "agenthost.credential.cache": "hit", "agenthost.credential.param": "token"}},
		{"tool", toolAttrs(host.ToolCallInfo{SessionID: "s1", CallID: "call_1", Server: "db", Tool: "drop", ExposedName: "db__drop"}),
			map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "drop", "mcp.method.name": "tools/call",
				"gen_ai.tool.call.id": "call_1", "gen_ai.conversation.id": "s1"}},
		{"mcp", mcpAttrs(host.MCPRequestInfo{Method: "tools/call", Server: "db", Tool: "drop", SessionID: "mcp-1", ProtocolVersion: "2025-11-25", Transport: "stdio"}),
			map[string]string{"mcp.method.name": "tools/call", "mcp.session.id": "mcp-1", "mcp.protocol.version": "2025-11-25", "network.transport": "pipe"}},
		{"model", append(turnAttrs(host.TurnInfo{SessionID: "s1", Model: "m"}), modelEndAttrs(host.ModelRequestEnd{InputTokens: 5, OutputTokens: 2, FinishReason: "stop"})...),
			map[string]string{"gen_ai.usage.input_tokens": "5", "gen_ai.usage.output_tokens": "2", "gen_ai.response.finish_reasons": "[stop]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]string{}
			for _, kv := range tt.attrs {
				v := kv.Value.String()
				if kv.Value.Type() == attribute.STRINGSLICE {
					v = fmt.Sprint(kv.Value.AsStringSlice())
				}
				got[string(kv.Key)] = v
				if strings.Contains(v, canary) || strings.Contains(string(kv.Key), canary) {
					t.Errorf("attribute %s holds free text: %q", kv.Key, v)
				}
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestErrorTypes(t *testing.T) {
	tests := []struct {
		tool host.ToolCallEnd
		mcp  host.MCPRequestEnd
		want [2]string
	}{
		{want: [2]string{"", ""}},
		{tool: host.ToolCallEnd{IsError: true}, mcp: host.MCPRequestEnd{IsError: true}, want: [2]string{"tool_error", "tool_error"}},
		{tool: host.ToolCallEnd{ErrorKind: host.KindDenied}, mcp: host.MCPRequestEnd{Failed: true, RPCCode: -32602}, want: [2]string{"denied", "-32602"}},
		{tool: host.ToolCallEnd{ErrorKind: host.KindUnavailable}, mcp: host.MCPRequestEnd{Failed: true}, want: [2]string{"unavailable", "_OTHER"}},
	}
	for _, tt := range tests {
		if got := [2]string{toolErrorType(tt.tool), mcpErrorType(tt.mcp)}; got != tt.want {
			t.Errorf("%+v %+v: %v, want %v", tt.tool, tt.mcp, got, tt.want)
		}
	}
}

// TestHostLinksNoOpenTelemetry: a library user who does not import this
// package does not link OpenTelemetry.
func TestHostLinksNoOpenTelemetry(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agenthost/agenthost/host").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "go.opentelemetry.io/") {
			t.Errorf("package host links %s", pkg)
		}
	}
}
