package auditlog

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// The decision record of a gate's result carries every field the audit
// reference (docs/audit.md) names.
func TestNewRecord(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	alice := approvals.Vote{ApproverID: "alice", Decision: approvals.VoteAllow, TS: time.Unix(10, 0)}
	g, err := approvals.NewGate(approvals.GateConfig{Policy: p, Approver: approvals.ApproverFunc(func(context.Context, *approvals.Request) (approvals.Verdict, error) {
		return approvals.Verdict{Votes: []approvals.Vote{alice}}, nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	c := approvals.Check{SessionID: "sess", Subject: "user", CallID: "c1",
		Call:        rules.Call{Server: "srv", Tool: "tool", Args: json.RawMessage(`{"q":"x"}`), TrustLevel: 3},
		Risk:        risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1),
		ToolDefHash: "sha256:def1", ExposedName: "srv__tool", SecureParams: []string{"token"}}
	res, _ := g.Check(context.Background(), c)
	rec := NewRecord(c, res, time.Unix(100, 0))
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"ts", "sessionId", "callId", "phase", "server", "tool", "toolDefHash", "exposedName", "arguments",
		"secureParams", "risk", "rules", "decision", "outcome", "approvers", "result", "durationMs"}
	if len(m) != len(want) {
		t.Errorf("keys %v, want exactly %v", keys(m), want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("missing key %q", k)
		}
	}
	for k, v := range map[string]string{
		"decision": `"ask"`, "outcome": `"approved"`, "rules": `["writes"]`, "secureParams": `["token"]`,
		"arguments": `{"q":"x"}`, "exposedName": `"srv__tool"`, "toolDefHash": `"sha256:def1"`,
		"approvers": `[{"id":"alice","decision":"allow","ts":"1970-01-01T00:00:10Z"}]`, "result": `"pending"`, "phase": `"decision"`,
	} {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
	denied := NewRecord(c, approvals.Result{Decision: rules.Decision{Action: rules.ActionDeny}, Outcome: rules.OutcomeDeniedByRule}, time.Now())
	if denied.Result != ResultNotExecuted || denied.Phase != PhaseDecision {
		t.Errorf("denied call result %q", denied.Result)
	}
}

func keys(m map[string]json.RawMessage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
