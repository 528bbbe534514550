//go:build unix

package e2e

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// TestRunContinueOnTerminal: `run --continue` with no prompt on a terminal
// is a REPL on the last session saved in the folder: its first line
// reaches the model after the saved conversation, and the turns it adds
// are saved to the same session (no new one).
func TestRunContinueOnTerminal(t *testing.T) {
	t.Parallel()
	model, s := rtTwoTurns(t)
	work := t.TempDir()
	env := []string{"XDG_STATE_HOME=" + filepath.Join(t.TempDir(), "state")}
	first := ftStartIn(t, work, env, "--config", s.cfg, "run", "first question", "--save", "--session-id", "cont-1", "--subject", "alice").wait(t, defaultRunTimeout)
	wantCode(t, first, 0)

	term := rtStartOnTerminalIn(t, work, env, "--config", s.cfg, "run", "--continue", "--subject", "alice")
	term.waitOutput(t, 20*time.Second, "> ")
	term.typed(t, "second question\r")
	term.waitOutput(t, 20*time.Second, "Second answer.")
	term.typed(t, "\x04") // Ctrl-D
	term.exitsWith(t, 0)

	wantSecondRequestCarries(t, model)
	list := ftStartIn(t, work, env, "--config", s.cfg, "sessions", "list", "--json").wait(t, defaultRunTimeout)
	wantCode(t, list, 0)
	var sessions []struct {
		ID       string `json:"id"`
		Messages int    `json:"messages"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &sessions); err != nil {
		t.Fatalf("sessions list --json: %v\n%s", err, list)
	}
	if len(sessions) != 1 || sessions[0].ID != "cont-1" || sessions[0].Messages != 4 {
		t.Fatalf("saved sessions %+v, want cont-1 alone with its 4 messages", sessions)
	}
}
