package run

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

// TestRunFlags: every flag of run lands in its options (session flags,
// headless flags, saved sessions), and the flag parser refuses what it
// must before anything runs.
func TestRunFlags(t *testing.T) {
	f, _ := cmdtest.Factory(t, "", "")
	var got *RunOptions
	capture := func(o *RunOptions) error { got = o; return nil }
	err := cmdtest.Parse(NewCmdRun(f, capture), "hello", "-p", "--output-format", "stream-json", "--max-steps", "3",
		"--system-prompt", "be brief", "--bind", "user=ann", "--trust", "2", "--approve", "auto", "--session-id", "s-1", "--subject", "ann",
		"--model", "m1", "--append-system-prompt", "more", "--max-turns", "3", "--permission-mode", "plan",
		"--mcp-config", "a.json", "--allowedTools", "mcp__a", "--disallowedTools", "mcp__b", "--input-format", "text",
		"--include-partial-messages", "--verbose", "--save")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Args) != 1 || got.Args[0] != "hello" || !got.Print || got.Format != formatStreamJSON || got.MaxSteps != 3 || got.SystemPrompt != "be brief" ||
		!got.MaxStepsSet || !got.MaxTurnsSet || got.Ctx == nil {
		t.Errorf("options %+v", got)
	}
	s := got.Session
	if len(s.Binds) != 1 || s.Binds[0] != "user=ann" || s.Trust != 2 || s.Approve != "auto" || s.ID != "s-1" || s.Subject != "ann" {
		t.Errorf("session flags %+v", s)
	}
	h := got.Headless
	if h.model != "m1" || h.appendSystemPrompt != "more" || h.maxTurns != 3 || h.permissionMode != "plan" || h.mcpConfigs[0] != "a.json" ||
		h.allowedTools[0] != "mcp__a" || h.disallowedTools[0] != "mcp__b" || h.inputFormat != "text" || !h.includePartial || !h.verbose {
		t.Errorf("headless flags %+v", h)
	}
	if !got.Saved.save || got.Saved.noSave || got.Saved.cont || got.Saved.resume != "" {
		t.Errorf("saved-session flags %+v", got.Saved)
	}

	f, _ = cmdtest.Factory(t, "", "")
	if err := cmdtest.Parse(NewCmdRun(f, capture)); err != nil || got.MaxSteps != 20 || got.Format != formatText || got.MaxStepsSet || got.Headless.inputFormat != "text" {
		t.Errorf("defaults: %v, %+v", err, got)
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"a", "b"}, "accepts at most 1 arg(s)"},
		{[]string{"--output-format", "xml"}, "--output-format"},
		{[]string{"--max-steps", "many"}, "--max-steps"},
	} {
		f, _ = cmdtest.Factory(t, "", "")
		err := cmdtest.Parse(NewCmdRun(f, capture), tc.args...)
		if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("run %v: %v, want a usage error naming %q", tc.args, err, tc.msg)
		}
	}
}

// TestRunValidation: the checks of run's own flags, each a usage error
// (exit 2) before any model is asked.
func TestRunValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"hi", "--max-steps", "0"}, "--max-steps: must be at least 1"},
		{[]string{"hi", "--max-turns", "0"}, "--max-turns: must be at least 1"},
		{[]string{"hi", "--max-turns", "3", "--max-steps", "4"}, "--max-turns and --max-steps are the same setting: give one"},
		{[]string{"hi", "--permission-mode", "yolo"}, `--permission-mode: "yolo" is not one of default, acceptEdits, plan, dontAsk, bypassPermissions`},
		{[]string{"hi", "--permission-mode", "plan", "--approve", "auto"}, "--permission-mode plan means --approve deny; give one of the two"},
		{[]string{"hi", "--input-format", "xml"}, `--input-format: "xml" is not one of text, stream-json`},
		{[]string{"hi", "--include-partial-messages"}, "--include-partial-messages needs --output-format stream-json"},
		{[]string{"hi", "--input-format", "stream-json"}, "--input-format stream-json reads the prompts from stdin: give no PROMPT argument"},
		{[]string{"hi", "--no-save", "--save"}, "--no-save: cannot be combined with --save, --resume or --continue"},
		{[]string{"hi", "--resume", "a", "--continue"}, "--resume and --continue: give one"},
		{[]string{"hi", "--trust", "7", "--no-save"}, "--trust: 7 is not in 1..5"},
		{[]string{"hi", "--no-save"}, "set llm.model in the config"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Setenv("AGENTHOST_LLM_MODEL", "")
			f, _ := cmdtest.Factory(t, "", "")
			err := cmdtest.Parse(NewCmdRun(f, nil), tc.args...)
			if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%v (exit %d), want exit 2 saying %q", err, cmdtest.Code(err), tc.msg)
			}
		})
	}
}

// With a model but no prompt (no argument, stdin empty), run is a usage
// error, after the servers had their say.
func TestRunWithoutAPrompt(t *testing.T) {
	t.Setenv("AGENTHOST_LLM_MODEL", "some-model")
	f, s := cmdtest.Factory(t, "", "  \n")
	err := cmdtest.Parse(NewCmdRun(f, nil), "--no-save")
	if cmdtest.Code(err) != 2 || !strings.Contains(err.Error(), "no prompt: give one as an argument or on stdin") {
		t.Errorf("%v (exit %d)", err, cmdtest.Code(err))
	}
	if !strings.Contains(s.ErrOut.String(), "the model is offered no tools") {
		t.Errorf("no warning about the tools: %q", s.ErrOut.String())
	}
}
