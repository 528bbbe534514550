package auditlog

import (
	"context"
	"encoding/json"
	"strings"
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

// A record's first Copy is in its allocation, later ones are not; every
// copy is the record, field for field and byte for byte, and changing one
// changes neither the record nor another copy. Arguments that fit are in
// the record's allocation too: a call's two records are one allocation.
func TestRecordCopy(t *testing.T) {
	small := json.RawMessage(`{"order_id":"A-1042","fields":["status","total"]}`)
	large := json.RawMessage(`{"q":"` + strings.Repeat("x", argsRoom) + `"}`)
	for _, tc := range []struct {
		name   string
		args   json.RawMessage
		allocs float64
	}{{"small arguments", small, 1}, {"large arguments", large, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			c := approvals.Check{SessionID: "sess", CallID: "c1", ToolDefHash: "sha256:def1", ExposedName: "srv__tool", SecureParams: []string{"token"},
				Call: rules.Call{Server: "srv", Tool: "tool", Args: tc.args, ArgsCheck: rules.CheckArgs(tc.args)},
				Risk: risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)}
			res := approvals.Result{Decision: rules.Decision{Action: rules.ActionAllow, Risk: c.Risk, Rules: []string{"r1"}}, Outcome: rules.OutcomeAutoAllowed}
			rec := NewRecord(c, res, time.Unix(1, 0))
			want := string(rec.appendJSON(nil))
			plain := *rec
			first, second := rec.Copy(), rec.Copy()
			if first != &rec.alloc.next || second == &rec.alloc.next || first == second {
				t.Fatalf("copies at %p and %p; the room is at %p", first, second, &rec.alloc.next)
			}
			inRoom := &rec.Arguments[0] == &rec.alloc.args[0]
			if inRoom != (len(tc.args) <= argsRoom) {
				t.Fatalf("arguments in the record's allocation: %v (%d bytes)", inRoom, len(tc.args))
			}
			for _, cp := range []*Record{first, second, &plain} {
				if got := string(cp.appendJSON(nil)); got != want {
					t.Fatalf("copy encodes as\n%s\nwant\n%s", got, want)
				}
			}
			first.Phase, first.Result, first.DurationMs = PhaseResult, ResultOK, 7
			if got := string(rec.appendJSON(nil)); got != want {
				t.Fatalf("the record changed with its copy:\n%s", got)
			}
			if got := string(second.appendJSON(nil)); got != want {
				t.Fatalf("a copy changed with another:\n%s", got)
			}
			if n := testing.AllocsPerRun(100, func() { _ = NewRecord(c, res, time.Unix(1, 0)).Copy() }); n != tc.allocs {
				t.Fatalf("a record and its copy: %v allocations, want %v", n, tc.allocs)
			}
		})
	}
}
