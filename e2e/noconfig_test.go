package e2e

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// TestRunWithoutAConfigFile: with no configuration file, `run` says in the
// CLI's words how to name a model (no library words such as
// Options.Model), and a shell set up for OpenAI's tools (OPENAI_BASE_URL,
// OPENAI_API_KEY) plus AGENTHOST_LLM_MODEL runs a turn: the model server
// requires that key.
func TestRunWithoutAConfigFile(t *testing.T) {
	t.Parallel()
	r := run(t, nil, "run", "hello")
	wantCode(t, r, 2)
	for _, want := range []string{"no model configured", "llm.model", "AGENTHOST_LLM_MODEL", "OPENAI_API_KEY"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("the message does not name %q\n%s", want, r)
		}
	}
	if strings.Contains(r.stderr, "Options.Model") {
		t.Errorf("the CLI speaks of the library's options\n%s", r)
	}

	const key = "sk-e2e-openai-variables"
	model := rtStartModelWith(t, modeltest.Script{rtText("Hello from the model.")}, "--api-key", key)
	r = run(t, []string{"OPENAI_BASE_URL=" + model.url, "OPENAI_API_KEY=" + key, "AGENTHOST_LLM_MODEL=scripted"}, "run", "hello")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "Hello from the model.") {
		t.Errorf("the turn did not reach the model\n%s", r)
	}
	wantNoCanary(t, r, key)
}
