package auditlog

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// The hand-written encoder writes the same JSON as encoding/json.
func TestRecordEncodingMatchesEncodingJSON(t *testing.T) {
	ts := time.Date(2026, 11, 29, 22, 1, 2, 345678900, time.UTC)
	failClosed := risk.FailClosed()
	failClosed.SideEffects = []string{"state_loss", "cost"}
	labelled := risk.FailClosed()
	labelled.Unclassified = true
	labelled.ResultLabels = []string{risk.LabelSensitive, risk.LabelUntrusted}
	records := []*Record{
		{TS: ts, SessionID: "s", CallID: "c", Server: "srv", Tool: "t", ToolDefHash: "h", ExposedName: "srv__t",
			Arguments: json.RawMessage(`{"q":"a\"b\\c\n\u2028 <>&"}`), SecureParams: []string{"instance"}, Risk: &failClosed,
			Rules: []string{"r1", "r2"}, Decision: rules.ActionAsk, Outcome: rules.OutcomeApproved,
			Approvers: []approvals.Vote{{ApproverID: "alice", Decision: approvals.VoteAllow, TS: ts}}, Result: ResultOK, DurationMs: 12},
		{TS: ts, Arguments: json.RawMessage("not json \xff\x01"), Tool: "ctl\x00\x1f\u2029 é", Decision: rules.ActionDeny,
			Outcome: rules.OutcomeInjectionBlocked, Result: ResultNotExecuted},
		{TS: ts},
		{TS: ts, Risk: &labelled, Phase: PhaseResult, Result: ResultOK,
			ResultLabels: []risk.ResultLabel{{Label: risk.LabelUntrusted, Source: risk.LabelFromTrustAnnotations}, {Label: "é\u2028\"", Source: risk.LabelFromActionMetadata}}},
	}
	for i, r := range records {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := r.appendJSON(nil)
		if !json.Valid(got) {
			t.Fatalf("record %d: invalid JSON %s", i, got)
		}
		var a, b any
		_ = json.Unmarshal(want, &a)
		_ = json.Unmarshal(got, &b)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("record %d (-encoding/json +appendJSON):\n%s\n%s\n%s", i, diff, want, got)
		}
	}
}
