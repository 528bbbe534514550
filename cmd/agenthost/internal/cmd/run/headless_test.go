package run

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host"
)

// The text output shows an ask when it is raised, before its decision;
// the fix for an ask nobody can answer is said once.
func TestTextPrintsApprovalRequested(t *testing.T) {
	one := 1
	tests := []struct {
		name   string
		events []host.Event
		want   []string
		once   string
	}{
		{"asked", []host.Event{
			{Type: host.EventToolCall, CallID: "c1", Server: "shop", Tool: "delete_order"},
			{Type: host.EventApprovalRequested, CallID: "c1", Server: "shop", Tool: "delete_order", ApprovalID: "apr_1", RiskLevel: "high", Approvers: &one, Deadline: "2026-07-01T12:05:00Z"},
			{Type: host.EventApproval, CallID: "c1", Server: "shop", Tool: "delete_order", Decision: "ask", Outcome: "approved"},
		}, []string{"[1] shop/delete_order approval requested: apr_1 (risk high, 1 approver, expires 2026-07-01T12:05:00Z)\n  [1] shop/delete_order approval: ask (approved)"}, ""},
		{"nobody can answer", []host.Event{
			{Type: host.EventToolCall, CallID: "c1", Server: "shop", Tool: "delete_order"},
			{Type: host.EventApprovalRequested, CallID: "c1", Server: "shop", Tool: "delete_order", Explanation: "classify the tool"},
			{Type: host.EventApproval, CallID: "c1", Server: "shop", Tool: "delete_order", Decision: "ask", Outcome: "rejected", Explanation: "classify the tool"},
		}, []string{"[1] shop/delete_order approval requested, but nobody can answer it here: classify the tool\n  [1] shop/delete_order approval: ask (rejected)"}, "classify the tool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			p := NewTextPrinter(&stdout, &stderr)
			for _, e := range tc.events {
				p.Print(e)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q, want %q", stderr.String(), w)
				}
			}
			if tc.once != "" && strings.Count(stderr.String(), tc.once) != 1 {
				t.Errorf("the fix is printed %d times, want once: %q", strings.Count(stderr.String(), tc.once), stderr.String())
			}
		})
	}
}

// The text output shows a call's task as it goes.
func TestTextPrintsToolTask(t *testing.T) {
	var stdout, stderr bytes.Buffer
	p := NewTextPrinter(&stdout, &stderr)
	for _, e := range []host.Event{
		{Type: host.EventToolCall, CallID: "c1", Server: "ci", Tool: "build"},
		{Type: host.EventToolTask, CallID: "c1", Server: "ci", Tool: "build", TaskID: "t-1", TaskStatus: "working", StatusMessage: "compiling"},
		{Type: host.EventToolTask, CallID: "c1", Server: "ci", Tool: "build", TaskID: "t-1", TaskStatus: "completed"},
	} {
		p.Print(e)
	}
	want := "  [1] ci/build task t-1: working (compiling)\n  [1] ci/build task t-1: completed\n"
	if !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr %q, want %q", stderr.String(), want)
	}
}
