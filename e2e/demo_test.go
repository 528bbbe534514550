package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestFtDemo runs `agenthost demo` as a user would, without a terminal: it
// needs no config, key or network, finishes quickly, tells the user the
// model is a script, shows the refused injection, the denied delete and
// destroy and the audit trail, and never shows the payroll data.
func TestFtDemo(t *testing.T) {
	t.Parallel()
	r := runWithTimeout(t, 20*time.Second, nil, "demo")
	wantCode(t, r, 0)
	if r.elapsed > 10*time.Second {
		t.Errorf("the demo took %s, want under 10s", r.elapsed)
	}
	out := r.stdout
	for _, want := range []struct{ what, text string }{
		{"the scripted-model label", "SCRIPT"},
		{"that it is not an LLM", "not an LLM"},
		{"the refused injection", "refused orders/execute_sql"},
		{"the reason of the refusal", "host-controlled (secure) parameter"},
		{"the audit trail", "audit trail"},
		{"the injection in the audit", "injection_blocked"},
		{"the session's end", "Turn ended: done"},
	} {
		if !strings.Contains(out, want.text) {
			t.Errorf("the demo does not show %s (%q)\n%s", want.what, want.text, r)
		}
	}

	// The delete is asked and, with nobody at a terminal, not approved; the
	// destroy is denied by rule. Both in the session and in the audit trail.
	deleteLines := ftLinesWith(out, "delete_rows")
	if !ftAnyContains(deleteLines, "ask") || !ftAnyContains(deleteLines, "rejected") || !ftAnyContains(deleteLines, "not_executed") {
		t.Errorf("the delete is not shown asked and rejected, not executed: %q", deleteLines)
	}
	dropLines := ftLinesWith(out, "drop_database")
	if !ftAnyContains(dropLines, "denied_by_rule") || !ftAnyContains(dropLines, "not_executed") {
		t.Errorf("the destroy is not shown denied by rule, not executed: %q", dropLines)
	}
	for _, line := range append(deleteLines, dropLines...) {
		if strings.Contains(line, "auto_allowed") || strings.Contains(line, "approved") && !strings.Contains(line, "not approved") {
			t.Errorf("a destructive call was allowed: %q", line)
		}
	}

	for _, leak := range []string{"950000", "demo-token-"} {
		if strings.Contains(r.stdout+r.stderr, leak) {
			t.Errorf("the demo shows %q (payroll data or the token)\n%s", leak, r)
		}
	}
}

// ftLinesWith returns the lines of text that contain s.
func ftLinesWith(text, s string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

func ftAnyContains(lines []string, s string) bool {
	for _, l := range lines {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}
