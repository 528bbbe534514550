//go:build unix

package e2e

import (
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
	model := rtStartModel(t, modeltest.Script{
		rtText("First answer."),
		{Text: "Second answer.", Expect: &modeltest.Expect{LastUserContains: "second question"}},
	})
	s := rtNewShop(t, model)
	term := rtStartOnTerminal(t, "--config", s.cfg, "run")
	term.waitOutput(t, 20*time.Second, "> ")
	if _, err := term.pty.Write([]byte("first question\n")); err != nil {
		t.Fatal(err)
	}
	term.waitOutput(t, 20*time.Second, "First answer.")
	if _, err := term.pty.Write([]byte("second question\n")); err != nil {
		t.Fatal(err)
	}
	term.waitOutput(t, 20*time.Second, "Second answer.")
	if _, err := term.pty.Write([]byte{4}); err != nil { // Ctrl-D
		t.Fatal(err)
	}
	if code := term.wait(t, 20*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, term.output())
	}
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
