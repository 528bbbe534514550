package demo

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
)

func TestDemoTellsTheWholeStory(t *testing.T) {
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Run(ctx, Options{Out: &out}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"built-in SCRIPT",
		"orders__execute_sql    parameters",
		"refused orders/execute_sql: the arguments name a host-controlled (secure) parameter; nothing was sent",
		"no such table: salaries",
		"policy ask -> rejected",
		"policy deny -> denied_by_rule",
		"execute_sql     deny     injection_blocked  not_executed",
		"drop_database   deny     denied_by_rule     not_executed",
		"Turn ended: done",
		// The instance is not a secret: the model's answer may name it.
		"pins this session to the checkout instance",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The payroll data never leaks, and neither does the token.
	for _, leak := range []string{"950000", "CEO", "demo-token-"} {
		if strings.Contains(text, leak) {
			t.Errorf("output contains %q", leak)
		}
	}
	// The model view names no secure parameter.
	view := text[strings.Index(text, "1. What"):strings.Index(text, "(project_id, instance")]
	for _, name := range []string{"project_id", "instance", "token"} {
		if strings.Contains(view, name) {
			t.Errorf("model view mentions %q:\n%s", name, view)
		}
	}
}

// The demo asks the approver the CLI hands in (its terminal prompt) about
// the delete, and runs it once approved.
func TestDemoAsksTheApprover(t *testing.T) {
	var out syncBuffer
	var mu sync.Mutex
	var asked []string
	approver := approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
		mu.Lock()
		asked = append(asked, req.Tool)
		mu.Unlock()
		return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "you", Decision: approvals.VoteAllow, TS: time.Now()}}}, nil
	})
	if err := Run(context.Background(), Options{Out: &out, Approver: approver}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || asked[0] != "delete_rows" {
		t.Errorf("asked about %q, want the delete_rows call only", asked)
	}
	for _, want := range []string{"asks:    you will be asked on this terminal", "policy ask -> approved", "deleted 1 rows"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
