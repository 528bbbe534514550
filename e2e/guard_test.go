package e2e

import (
	"strings"
	"testing"
)

// TestArgumentGuardThroughCall: through the binary, an escalator spelled
// with escapes (or a ns/project wildcard) is denied by a policy that
// denies escalated calls, and arguments that repeat a key are refused as
// invalid; in both cases nothing reaches the server and the attempt is
// audited with the arguments as sent.
func TestArgumentGuardThroughCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := dir + "/record.jsonl"
	tools := writeJSON(t, dir, "tools.json", []obj{{
		"name": "get_order", "inputSchema": obj{"type": "object"},
		"annotations": rtRisk("read", "low", "item", "auto", "none"), "x-test": obj{"text": "order 7"},
	}})
	entry := stdioServer(tools, record)
	entry["trustAnnotations"] = true
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"shop": entry},
		"approvals": obj{"rules": []obj{
			{"id": "reads", "when": obj{"category": []string{"read"}}, "decide": "allow"},
			{"id": "escalated", "when": obj{"riskLevel": []string{"medium", "high", "critical"}}, "decide": "deny"},
			{"id": "wide", "when": obj{"blastRadius": []string{"cluster", "organization", "global"}}, "decide": "deny"},
		}},
	})
	call := func(args string) result {
		return run(t, nil, "--config", cfg, "call", "shop", "get_order", "--args", args, "--json")
	}
	wantCode(t, call(`{"query":"7","note":"force"}`), 0)

	denied := []string{`{"\u0066orce":true}`, `{"c\u0061scade":true}`, `{"n\u0061mespace":"*"}`, `{"ns":"*"}`, `{"project":"*"}`}
	for _, args := range denied {
		wantCallError(t, call(args), 3, "denied")
	}
	duplicates := []string{`{"query":"7","query":"8"}`, `{"query":"7","o":{"k":1,"\u006b":2}}`}
	for _, args := range duplicates {
		msg := wantCallError(t, call(args), 5, "tool_error")
		if !strings.Contains(msg, "repeats a key") {
			t.Errorf("%s: message %q does not say why", args, msg)
		}
	}
	if calls := withMethod(readRecord(t, record), "tools/call"); len(calls) != 1 {
		t.Errorf("%d calls reached the server, want only the plain one", len(calls))
	}
	// The plain call that ran has a decision and a result record; each
	// refused call one.
	recs := rtReadAudit(t, rtAuditPath(cfg))
	if len(recs) != 2+len(denied)+len(duplicates) {
		t.Fatalf("%d audit records, want %d", len(recs), 2+len(denied)+len(duplicates))
	}
	for i, args := range append(denied, duplicates...) {
		rec := recs[2+i]
		want := "denied_by_rule"
		if i >= len(denied) {
			want = "injection_blocked"
		}
		if rec.Outcome != want || rec.Result != "not_executed" || string(rec.Arguments) != args {
			t.Errorf("record for %s: outcome %s, result %s, arguments %s", args, rec.Outcome, rec.Result, rec.Arguments)
		}
	}
}
