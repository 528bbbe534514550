package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// ccTools are a server with three classified tools, for the headless flag
// tests; noMatch ask makes every call ask unless a rule says otherwise.
func ccToolsConfig(t *testing.T, model *rtModel, extra obj) string {
	t.Helper()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "ping", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "pong"}},
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "all good"}},
		{"name": "reboot", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "rebooted"}},
	})
	cfg := obj{
		"llm":        model.llm(),
		"mcpServers": obj{"srv": stdioServer(tools, "")},
		"approvals": obj{"catalogue": []obj{{"server": "srv", "tool": "*", "metadata": obj{
			"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto",
			"approvalRecommendation": "none", "minTrustLevel": 1,
		}}}, "noMatch": "ask"},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfig(t, cfg)
}

func ccDenied(lines []ccLine) []string {
	var out []string
	for _, d := range lines[len(lines)-1].PermissionDenials {
		out = append(out, d.ToolName)
	}
	slices.Sort(out)
	return out
}

// ccResults maps each tool_result's call id to its is_error.
func ccResults(lines []ccLine) map[string]bool {
	out := map[string]bool{}
	for _, l := range ccOfType(lines, "user") {
		for _, c := range l.Message.Content {
			if c.Type == "tool_result" {
				out[c.ToolUseID] = c.IsError
			}
		}
	}
	return out
}

var ccThreeCalls = modeltest.Script{
	rtCalls(rtCall("c1", "srv__ping", obj{}), rtCall("c2", "srv__status", obj{}), rtCall("c3", "srv__reboot", obj{})),
	rtText("Done."),
}

// TestCcHeadlessFlags runs Claude Code's headless flags through the binary.
func TestCcHeadlessFlags(t *testing.T) {
	t.Parallel()

	// --allowedTools allows, --disallowedTools denies (the tool is not
	// offered, and a call to it is refused), and under --permission-mode
	// dontAsk the ask of the third call is refused.
	t.Run("allowedTools disallowedTools permission-mode", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, ccThreeCalls)
		r := run(t, nil, "--config", ccToolsConfig(t, model, nil), "run", "go", "-p", "--verbose", "--output-format", "stream-json",
			"--permission-mode", "dontAsk", "--allowedTools", "mcp__srv__ping,Bash(git log:*)", "--disallowedTools", "mcp__srv__status")
		wantCode(t, r, 0)
		lines := ccLines(t, r)
		if init := lines[0]; init.PermissionMode != "dontAsk" || !slices.Equal(init.Tools, []string{"mcp__srv__ping", "mcp__srv__reboot"}) {
			t.Errorf("init %s, want permissionMode dontAsk and status not offered", init.raw)
		}
		if got := ccDenied(lines); !slices.Equal(got, []string{"mcp__srv__reboot"}) {
			t.Errorf("permission_denials %v, want reboot (asked, nobody may answer)\n%s", got, r)
		}
		if got := ccResults(lines); got["c1"] || !got["c2"] || !got["c3"] {
			t.Errorf("results (is_error by call) %v, want only ping to run", got)
		}
		if a := ccOfType(lines, "approval"); len(a) != 2 {
			t.Errorf("%d approval events, want ping's (allowed by --allowedTools) and reboot's\n%s", len(a), r)
		}
		if !strings.Contains(r.stderr, `"Bash(git log:*)" names no MCP tool`) {
			t.Errorf("no warning about the pattern agenthost cannot apply\n%s", r)
		}
	})

	// bypassPermissions approves the asks; a deny rule still denies.
	t.Run("bypassPermissions", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, ccThreeCalls)
		r := run(t, nil, "--config", ccToolsConfig(t, model, nil), "run", "go", "--output-format", "stream-json",
			"--permission-mode", "bypassPermissions", "--disallowedTools", "mcp__srv__status")
		wantCode(t, r, 0)
		lines := ccLines(t, r)
		if got := ccResults(lines); got["c1"] || !got["c2"] || got["c3"] {
			t.Errorf("results (is_error by call) %v, want every call but the disallowed status to run\n%s", got, r)
		}
	})

	// A run in which every call was denied is a success that lists them.
	t.Run("every call denied", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, ccThreeCalls)
		r := run(t, nil, "--config", ccToolsConfig(t, model, nil), "run", "go", "--output-format", "stream-json", "--permission-mode", "plan")
		wantCode(t, r, 0)
		lines := ccLines(t, r)
		if got := ccDenied(lines); !slices.Equal(got, []string{"mcp__srv__ping", "mcp__srv__reboot", "mcp__srv__status"}) {
			t.Errorf("permission_denials %v, want every call\n%s", got, r)
		}
		if end := lines[len(lines)-1]; end.Subtype != "success" || end.IsError {
			t.Errorf("result %s, want success", end.raw)
		}
	})

	// settings.json's permissions load as rules.
	t.Run("settings.json permissions", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, ccThreeCalls)
		cfg := ccToolsConfig(t, model, obj{"permissions": obj{
			"allow": []string{"mcp__srv"}, "deny": []string{"mcp__srv__reboot"}, "ask": []string{"Read"},
		}})
		r := run(t, nil, "--config", cfg, "run", "go", "--output-format", "stream-json")
		wantCode(t, r, 0)
		lines := ccLines(t, r)
		if got := ccResults(lines); got["c1"] || got["c2"] || !got["c3"] {
			t.Errorf("results (is_error by call) %v, want ping and status allowed (mcp__srv), reboot denied\n%s", got, r)
		}
		if len(ccDenied(lines)) != 0 || len(ccOfType(lines, "approval_requested")) != 0 {
			t.Errorf("want no ask and no denial of an offered tool\n%s", r)
		}
		if !strings.Contains(r.stderr, `"Read" names no MCP tool`) {
			t.Errorf("no warning about the pattern agenthost cannot apply\n%s", r)
		}
	})

	// --max-turns is --max-steps: error_max_turns, exit 7.
	t.Run("max-turns", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, ccThreeCalls)
		r := run(t, nil, "--config", ccToolsConfig(t, model, nil), "run", "go", "--output-format", "stream-json", "--max-turns", "1", "--approve", "auto")
		wantCode(t, r, 7)
		res := ccLines(t, r)
		if end := res[len(res)-1]; end.Subtype != "error_max_turns" || !end.IsError || end.NumTurns != 1 || end.Result != nil {
			t.Errorf("result %s, want error_max_turns after 1 turn", end.raw)
		}
	})

	// --model, --append-system-prompt, --mcp-config, --input-format
	// stream-json (two turns) and --include-partial-messages.
	t.Run("model mcp-config input-format partial", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, modeltest.Script{
			rtCalls(rtCall("c1", "extra__ping", obj{})),
			rtText("The first answer is long enough to stream."),
			rtText("Second."),
		})
		tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "ping", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "pong"}}})
		mcp := writeJSON(t, t.TempDir(), ".mcp.json", obj{"mcpServers": obj{"extra": stdioServer(tools, "")}, "someOtherKey": true})
		cfg := writeConfig(t, obj{"llm": model.llm(), "approvals": allowAll()})
		cfg = rtWithPrices(t, cfg, obj{"other-model": obj{"input": 1.0, "output": 1.0}})
		cfg = rtWithSystemPrompt(t, cfg, "You are terse.")
		stdin := `{"type":"user","message":{"role":"user","content":"first"}}` + "\n" +
			`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"second"}]}}` + "\n"
		r := runWithStdin(t, defaultRunTimeout, strings.NewReader(stdin), nil, "--config", cfg, "run", "--model", "other-model",
			"--append-system-prompt", "Answer in English.", "--mcp-config", mcp, "--input-format", "stream-json",
			"--output-format", "stream-json", "--include-partial-messages")
		wantCode(t, r, 0)
		lines := ccLines(t, r)
		var results []ccLine
		var streamed strings.Builder
		for _, l := range lines {
			switch {
			case l.Type == "result":
				results = append(results, l)
			case l.Type == "stream_event" && l.Event.Type == "content_block_delta" && len(results) == 0:
				streamed.WriteString(l.Event.Delta.Text)
			}
		}
		if len(results) != 2 || *results[0].Result != "The first answer is long enough to stream." || *results[1].Result != "Second." {
			t.Fatalf("want a result per user message: %v", results)
		}
		if streamed.String() != "The first answer is long enough to stream." {
			t.Errorf("streamed text %q, want the first answer", streamed.String())
		}
		if init := lines[0]; init.Model != "other-model" || !slices.Contains(init.Tools, "mcp__extra__ping") {
			t.Errorf("init %s, want the --model and the --mcp-config server's tool", init.raw)
		}
		if c := results[0].TotalCostUSD; c == nil || *c == 0 {
			t.Errorf("the first result costs %v, want llm.prices of --model", c)
		}
		rec := model.recording(t)
		if len(rec) != 3 || !strings.Contains(string(rec[0].Body), `"model":"other-model"`) {
			t.Fatalf("the model got %d requests, want 3 for other-model", len(rec))
		}
		msgs := rec.MessagesOf(0)
		if len(msgs) == 0 || msgs[0].Role != "system" || msgs[0].Text() != "You are terse.\n\nAnswer in English." {
			t.Errorf("system prompt %+v, want the config's with the appended text", msgs)
		}
		if last := rec.MessagesOf(2); last[len(last)-1].Text() != "second" {
			t.Errorf("the second turn's prompt: %+v", last[len(last)-1])
		}
	})
}

// rtWithSystemPrompt sets llm.systemPrompt in the config at path.
func rtWithSystemPrompt(t *testing.T, path, prompt string) string {
	t.Helper()
	return rtEditLLM(t, path, "systemPrompt", prompt)
}
