package auditlog

import (
	"encoding/json"
	"strings"
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

// A record made from a call whose arguments were checked once
// (Call.ArgsCheck) encodes the same bytes as one made without the check,
// and arguments replaced after NewRecord (a redactor's rewrite) are
// encoded as they are, never taken as vouched for.
func TestRecordWithCheckedArgumentsEncodesTheSame(t *testing.T) {
	ts := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	eff := risk.FailClosed()
	res := approvals.Result{Decision: rules.Decision{Action: rules.ActionAllow, Risk: eff}, Outcome: rules.OutcomeAutoAllowed}
	for _, args := range []string{`{"q":"a"}`, " {\"q\" : [1, 2]}\f", `null`, ``, `not json`, "{\"a\":\"\xff\"}", `{"a":1} x`} {
		raw := json.RawMessage(args)
		plain := NewRecord(approvals.Check{Call: rules.Call{Tool: "t", Args: raw}}, res, ts)
		checked := NewRecord(approvals.Check{Call: rules.Call{Tool: "t", Args: raw, ArgsCheck: rules.CheckArgs(raw)}}, res, ts)
		want := plain.appendJSON(nil)
		if got := checked.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%q: checked record\n%s\nwant\n%s", args, got, want)
		}
		wantM, _ := json.Marshal(plain)
		if got, _ := json.Marshal(checked); string(got) != string(wantM) {
			t.Errorf("%q: checked record's MarshalJSON\n%s\nwant\n%s", args, got, wantM)
		}
		if !json.Valid(want) {
			t.Errorf("%q: invalid line %s", args, want)
		}
	}
	raw := json.RawMessage(`{"q":"a"}`)
	rec := NewRecord(approvals.Check{Call: rules.Call{Tool: "t", Args: raw, ArgsCheck: rules.CheckArgs(raw)}}, res, ts)
	// A prefix of the very bytes checked: not what was checked.
	rec.Arguments = rec.Arguments[:len(rec.Arguments)-1]
	if line := rec.appendJSON(nil); !json.Valid(line) {
		t.Fatalf("replaced arguments were taken as checked: %s", line)
	}
	rec.Arguments = json.RawMessage("{\"q\":\"\x01\"}")
	if line, want := rec.appendJSON(nil), `,"arguments":"{\"q\":\"\u0001\"}",`; !strings.Contains(string(line), want) {
		t.Fatalf("rewritten arguments: %s, want %s in it", line, want)
	}
}
