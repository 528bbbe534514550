//go:build unix

package e2e

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestREPLKeepsTheConversation: `agenthost run` with no prompt on a terminal
// is a REPL; the second turn's model request carries the first turn, and
// Ctrl-D leaves with exit 0.
func TestREPLKeepsTheConversation(t *testing.T) {
	t.Parallel()
	model, s := rtTwoTurns(t)
	term := rtStartOnTerminal(t, "--config", s.cfg, "run")
	term.waitOutput(t, 20*time.Second, "> ")
	if _, err := term.pty.Write([]byte("first question\r")); err != nil {
		t.Fatal(err)
	}
	term.waitOutput(t, 20*time.Second, "First answer.")
	if _, err := term.pty.Write([]byte("second question\r")); err != nil {
		t.Fatal(err)
	}
	term.waitOutput(t, 20*time.Second, "Second answer.")
	if _, err := term.pty.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	if code := term.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, term.output())
	}
	wantSecondRequestCarries(t, model)
}

// rtTwoTurns is a model that answers "First answer.", then "Second
// answer." to a message holding "second question", and a shop using it.
func rtTwoTurns(t *testing.T) (*rtModel, rtShop) {
	t.Helper()
	model := rtStartModel(t, modeltest.Script{
		rtText("First answer."),
		{Text: "Second answer.", Expect: &modeltest.Expect{LastUserContains: "second question"}},
	})
	return model, rtNewShop(t, model)
}

// wantSecondRequestCarries checks that rtTwoTurns' model was asked twice,
// the second time with the first turn and then the second question.
func wantSecondRequestCarries(t *testing.T, model *rtModel) {
	t.Helper()
	model.wantNoFailures(t)
	rec := model.recording(t)
	if len(rec) != 2 {
		t.Fatalf("%d model requests, want 2", len(rec))
	}
	var texts []string
	for _, m := range rec.MessagesOf(1) {
		texts = append(texts, m.Role+":"+m.Text())
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"user:first question", "assistant:First answer.", "user:second question"} {
		if !strings.Contains(joined, want) {
			t.Errorf("second request lacks %q: %s", want, joined)
		}
	}
}

// waitCount waits until the terminal has shown want at least n times.
func (term *rtTerminal) waitCount(t *testing.T, within time.Duration, want string, n int) {
	t.Helper()
	deadline := time.After(within)
	for strings.Count(term.output(), want) < n {
		select {
		case <-term.done:
			t.Fatalf("agenthost exited before showing %q %d times\n%s", want, n, term.output())
		case <-deadline:
			t.Fatalf("the terminal did not show %q %d times within %s\n%s", want, n, within, term.output())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestREPLApprovalPrompt answers approval questions in the REPL: y runs
// the call, n refuses it, a long argument shows its size and v shows it
// all, Ctrl-C at the question denies the call as interrupted and ends the
// turn but not the REPL, and the next line typed reaches the model. Each
// tool-call line is printed before its question.
func TestREPLApprovalPrompt(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("0123456789", 600) + "END-OF-LONG-ARGUMENT"
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "shop__delete_order", obj{"query": "7"})),
		rtText("Deleted 7."),
		rtCalls(rtCall("c2", "shop__delete_order", obj{"query": "8"})),
		rtText("Kept 8."),
		rtCalls(rtCall("c3", "shop__delete_order", obj{"query": long})),
		{Text: "Fourth answer.", Expect: &modeltest.Expect{LastUserContains: "after the interrupt"}},
	})
	s := rtNewShop(t, model)
	term := rtStartOnTerminalEnv(t, []string{"USER=tester"}, "--config", s.cfg, "run")
	typeLine := func(line string) {
		t.Helper()
		if _, err := term.pty.Write([]byte(line + "\r")); err != nil {
			t.Fatal(err)
		}
	}
	// An answer counts only when typed after its question is drawn.
	answer := func(line string) {
		t.Helper()
		time.Sleep(300 * time.Millisecond)
		typeLine(line)
	}
	term.waitOutput(t, 20*time.Second, "interactive session")
	typeLine("delete order 7")
	term.waitCount(t, 20*time.Second, "approval needed", 1)
	answer("y")
	term.waitOutput(t, 20*time.Second, "Deleted 7.")
	typeLine("delete order 8")
	term.waitCount(t, 20*time.Second, "approval needed", 2)
	answer("n")
	term.waitOutput(t, 20*time.Second, "Kept 8.")
	typeLine("delete the long one")
	term.waitCount(t, 20*time.Second, "approval needed", 3)
	if out := term.output(); !strings.Contains(out, "(6,032 bytes, first 2,000 characters shown; answer v to view all)") ||
		strings.Contains(out, "END-OF-LONG-ARGUMENT") {
		t.Fatalf("the long argument's question lacks its size line, or shows it all\n%s", out)
	}
	answer("v")
	term.waitOutput(t, 20*time.Second, "  arguments (6,032 bytes):")
	if !strings.Contains(term.output(), `{"query":"`+long+`"}`) {
		t.Fatalf("v did not show the whole argument\n%s", term.output())
	}
	if _, err := term.pty.Write([]byte{3}); err != nil { // Ctrl-C
		t.Fatal(err)
	}
	term.waitOutput(t, 20*time.Second, "interrupted: denied")
	term.waitOutput(t, 20*time.Second, "turn ended: interrupted")
	typeLine("after the interrupt")
	term.waitOutput(t, 20*time.Second, "Fourth answer.")
	if _, err := term.pty.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	out := term.output()
	if code := term.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, out)
	}
	if strings.Contains(out, "no answer in time") {
		t.Errorf("the interrupted question was reported as timed out\n%s", out)
	}
	// Each question comes after its call's tool-call line, on a line of
	// its own.
	parts := strings.Split(out, "approval needed")
	if len(parts) != 4 {
		t.Errorf("%d questions, want 3\n%s", len(parts)-1, out)
	}
	for i, before := range parts[:len(parts)-1] {
		if strings.Count(strings.Join(parts[:i+1], ""), "→ [1] shop/delete_order") != i+1 || !strings.Contains(before, "→ [1] shop/delete_order") {
			t.Errorf("question %d was printed before its tool-call line\n%s", i+1, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "Allow?") && strings.Contains(line, "→") {
			t.Errorf("a tool-call line landed on a question's input line: %q", line)
		}
	}
	rtWantNoText(t, "the terminal", out, s.tenantValue)
	model.wantNoFailures(t)
	if got := s.executed(t); !slices.Equal(got, []string{"delete_order"}) {
		t.Errorf("the server ran %v, want delete_order once", got)
	}
	byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(s.cfg)))
	rtWantAudit(t, byCall, "c1", "delete_order", "ask", "approved", "ok")
	rtWantAudit(t, byCall, "c2", "delete_order", "ask", "rejected", "not_executed")
	a := rtWantAudit(t, byCall, "c3", "delete_order", "ask", "rejected", "not_executed")
	if len(a.Approvers) != 1 || a.Approvers[0].Decision != "deny" || a.Approvers[0].ID != "tester" {
		t.Errorf("interrupted call's approvers %+v, want one deny vote by tester", a.Approvers)
	}
	rec := model.recording(t)
	if len(rec) != 6 {
		t.Fatalf("%d model requests, want 6", len(rec))
	}
	var texts []string
	for _, m := range rec.MessagesOf(5) {
		texts = append(texts, m.Role+":"+m.Text())
	}
	joined := strings.Join(texts, "|")
	for _, want := range []string{"user:after the interrupt", `Approver note: "interrupted"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("the request after the interrupt lacks %q: %s", want, joined)
		}
	}
}
