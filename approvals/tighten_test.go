package approvals

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// An outside check (a PreToolUse hook) can only tighten a decision.
func TestGateTighten(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	read := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	del := risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1)
	wide := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastGlobal, risk.ApprovalSingle, 1)
	allow := func(id string) Vote { return Vote{ApproverID: id, Decision: VoteAllow} }
	tests := []struct {
		name      string
		risk      risk.Effective
		tighten   rules.Action
		votes     []Vote
		outcome   rules.Outcome
		approvers int
		asked     int32
		note      string
	}{
		{"allow stays allow", read, rules.ActionAllow, nil, rules.OutcomeAutoAllowed, 0, 0, ""},
		{"ask raises an allow", read, rules.ActionAsk, []Vote{allow("alice")}, rules.OutcomeApproved, 1, 1, ""},
		{"ask raised and nobody answers", read, rules.ActionAsk, nil, rules.OutcomeRejected, 1, 1, ""},
		{"ask keeps a two-approver quorum", del, rules.ActionAsk, []Vote{allow("alice")}, rules.OutcomeRejected, 2, 1, ""},
		{"deny denies an allow", read, rules.ActionDeny, []Vote{allow("alice")}, rules.OutcomeDeniedByRule, 0, 0, "hook says no"},
		{"deny denies an ask without asking", del, rules.ActionDeny, []Vote{allow("alice"), allow("bob")}, rules.OutcomeDeniedByRule, 0, 0, "hook says no"},
		{"allow does not loosen a deny", wide, rules.ActionAllow, []Vote{allow("alice")}, rules.OutcomeDeniedByRule, 0, 0, ""},
		{"ask does not loosen a deny", wide, rules.ActionAsk, []Vote{allow("alice")}, rules.OutcomeDeniedByRule, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			g := newGate(t, p, votes(&calls, tt.votes...))
			c := check(tt.risk, `{"id":1}`)
			c.Call.Tighten, c.Call.TightenBy = tt.tighten, "hook:guard"
			if tt.tighten == rules.ActionDeny {
				c.Call.TightenMessage = "hook says no"
			}
			res, err := g.Check(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if res.Outcome != tt.outcome || res.Decision.Approvers != tt.approvers || calls.Load() != tt.asked {
				t.Fatalf("got %s approvers %d asked %d, want %s %d %d", res.Outcome, res.Decision.Approvers, calls.Load(), tt.outcome, tt.approvers, tt.asked)
			}
			if tt.note != "" && !strings.Contains(res.ModelMessage, tt.note) {
				t.Errorf("model message %q lacks the hook's reason", res.ModelMessage)
			}
			if tt.tighten != rules.ActionAllow && !slices.Contains(res.Decision.Rules, "hook:guard") {
				t.Errorf("rules %v do not name the hook", res.Decision.Rules)
			}
		})
	}
}

// A grant for the session does not answer an ask a hook raised.
func TestGateTightenedAskIgnoresGrant(t *testing.T) {
	p := approvaltest.MustPolicy(t, approvaltest.ContractConfig())
	write := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	var calls atomic.Int32
	g := newGate(t, p, votes(&calls, Vote{ApproverID: "alice", Decision: VoteAllow, ForSession: true}))
	c := check(write, `{"id":1}`)
	if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeApproved {
		t.Fatalf("first call: %s", res.Outcome)
	}
	if res, _ := g.Check(context.Background(), c); res.Outcome != rules.OutcomeGranted {
		t.Fatalf("second call should be granted: %s", res.Outcome)
	}
	c.Call.Tighten, c.Call.TightenBy = rules.ActionAsk, "hook:guard"
	res, _ := g.Check(context.Background(), c)
	if res.Outcome != rules.OutcomeApproved || calls.Load() != 2 {
		t.Fatalf("a hook's ask must ask again: %s, asked %d", res.Outcome, calls.Load())
	}
}
