package e2e

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestOneShotRunSavesOnlyWhenAsked: a one-shot run stays in memory, as it
// did before sessions were saved (a script pays nothing for the saved
// sessions), and --save keeps it for --resume and --continue.
func TestOneShotRunSavesOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	model := rtStartModel(t, modeltest.Script{rtText("first answer"), rtText("second answer")})
	cfg := writeConfig(t, obj{"llm": model.llm()})
	env := []string{"XDG_STATE_HOME=" + t.TempDir()}

	r := run(t, env, "--config", cfg, "run", "not saved", "--session-id", "e2e-unsaved")
	wantCode(t, r, 0)
	r = run(t, env, "--config", cfg, "run", "saved", "--session-id", "e2e-saved", "--save")
	wantCode(t, r, 0)

	r = run(t, env, "sessions", "list", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"e2e-saved"`) || strings.Contains(r.stdout, "e2e-unsaved") {
		t.Errorf("saved sessions after a plain run and a --save run:\n%s", r)
	}
	r = run(t, env, "--config", cfg, "run", "again", "--no-save", "--save")
	wantCode(t, r, 2)
}
