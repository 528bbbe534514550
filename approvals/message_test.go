package approvals

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func TestModelMessage(t *testing.T) {
	tests := []struct {
		outcome rules.Outcome
		reason  rules.ReasonClass
		note    string
		want    []string
		not     []string
	}{
		{rules.OutcomeDeniedByRule, rules.ReasonPolicy, "org-wide changes are not allowed", []string{"approval policy", `Policy note: "org-wide changes are not allowed"`}, nil},
		{rules.OutcomeRejected, rules.ReasonDeclined, "use the staging DB", []string{"declined", `Approver note: "use the staging DB"`}, nil},
		{rules.OutcomeExpired, rules.ReasonTimeout, "ignored", []string{"timed out"}, []string{"ignored"}},
		{rules.OutcomeTrustDenied, rules.ReasonTrust, "", []string{"trust level"}, nil},
		{rules.OutcomeRejected, rules.ReasonNoApprover, "", []string{"no approver"}, nil},
		{rules.OutcomeError, rules.ReasonError, "stack trace", []string{"approval step failed"}, []string{"stack"}},
		{rules.OutcomeExpired, "", "", []string{"timed out"}, nil},
	}
	for _, tt := range tests {
		msg := ModelMessage(tt.outcome, tt.reason, tt.note)
		for _, w := range append(tt.want, "not executed", "Do not retry the same call") {
			if !strings.Contains(msg, w) {
				t.Errorf("%s/%s: %q lacks %q", tt.outcome, tt.reason, msg, w)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(msg, n) {
				t.Errorf("%s/%s: %q contains %q", tt.outcome, tt.reason, msg, n)
			}
		}
	}
	for _, o := range []rules.Outcome{rules.OutcomeAutoAllowed, rules.OutcomeApproved, rules.OutcomeGranted} {
		if m := ModelMessage(o, "", "x"); m != "" {
			t.Errorf("%s gave %q", o, m)
		}
	}
}

func TestModelMessageSanitisesNotes(t *testing.T) {
	note := "line one\nline\ttwo \x1b[31mred\x1b[0m \u202eevil\u200b " + strings.Repeat("é", 300)
	msg := ModelMessage(rules.OutcomeRejected, rules.ReasonDeclined, note)
	if strings.ContainsAny(msg, "\n\t\x1b\u202e\u200b") {
		t.Errorf("control characters survived: %q", msg)
	}
	start := strings.Index(msg, `note: "`) + len(`note: "`)
	end := strings.Index(msg[start:], `".`)
	quoted := msg[start : start+end]
	if n := utf8.RuneCountInString(quoted); n > maxNoteRunes {
		t.Errorf("note is %d runes, cap is %d", n, maxNoteRunes)
	}
	if !strings.HasPrefix(quoted, "line one line two [31mred[0m evil") || !strings.HasSuffix(quoted, "…") {
		t.Errorf("quoted note %q", quoted)
	}
}

// TestModelMessagesHideInternals runs denials through the Gate and checks
// that what the model reads names no rule and no approver.
func TestModelMessagesHideInternals(t *testing.T) {
	cfg := rules.Config{Rules: []rules.Rule{
		{ID: "rule-7f3a-secret", When: rules.Match{BlastRadius: []string{"global"}}, Decide: "deny", Message: "not from agents"},
		{ID: "rule-ask-9b1c", When: rules.Match{Category: []string{"mutate"}}, Decide: "ask"},
		{ID: "rule-trust-2d4e", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
	}}
	p := approvaltest.MustPolicy(t, cfg)
	approver := ApproverFunc(func(context.Context, *Request) (Verdict, error) {
		return Verdict{Votes: []Vote{{ApproverID: "alice@corp.example", Decision: VoteDeny, Note: "too risky"}}}, nil
	})
	g := newGate(t, p, approver)
	cases := []risk.Effective{
		risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastGlobal, risk.ApprovalSingle, 1), // denied by rule
		risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1),   // declined by alice
		risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 5),          // trust
	}
	for _, e := range cases {
		res, err := g.Check(context.Background(), check(e, `{}`))
		if err != nil || res.Allowed() {
			t.Fatalf("%s err %v", res.Outcome, err)
		}
		for _, secret := range []string{"rule-", "7f3a", "9b1c", "2d4e", "alice", "corp.example", "minTrustLevel", "noMatch"} {
			if strings.Contains(res.ModelMessage, secret) {
				t.Errorf("%s: model message %q leaks %q", res.Outcome, res.ModelMessage, secret)
			}
		}
	}
}
