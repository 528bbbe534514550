package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/modeltest"
)

// headlessEvent holds the fields of session_start and session_end that
// scripts read (docs/events.md).
type headlessEvent struct {
	Type    string `json:"type"`
	Model   string `json:"model"`
	Servers []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Tools  int    `json:"tools"`
	} `json:"servers"`
	Tools      []string `json:"tools"`
	Server     string   `json:"server"`
	Tool       string   `json:"tool"`
	CallID     string   `json:"callId"`
	Result     *string  `json:"result"`
	DurationMs *int64   `json:"durationMs"`
	Steps      int      `json:"steps"`
}

func headlessEvents(t *testing.T, r result) []headlessEvent {
	t.Helper()
	var out []headlessEvent
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var e headlessEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v\n%s", line, err, r)
		}
		out = append(out, e)
	}
	return out
}

func TestHeadlessOutput(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "status", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "status-tool-output"}},
		{"name": "ping", "inputSchema": obj{"type": "object"}, "x-test": obj{"text": "pong"}},
	})
	script := modeltest.Script{
		{Text: "Let me check.", ToolCalls: []modeltest.ToolCall{rtCall("c1", "srv__status", obj{}), rtCall("c2", "srv__ping", obj{})}},
		rtText("The answer is 42."),
	}
	config := func(t *testing.T, model *rtModel) string {
		return writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, "")}, "approvals": allowAll()})
	}

	t.Run("agenthost-stream-json", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		r := run(t, nil, "--config", config(t, model), "run", "what is it?", "--output-format", "agenthost-stream-json")
		wantCode(t, r, 0)
		events := headlessEvents(t, r)
		start, end := events[0], events[len(events)-1]
		if start.Type != "session_start" || start.Model == "" || len(start.Servers) != 1 || start.Servers[0].Name != "srv" ||
			start.Servers[0].Status != "connected" || start.Servers[0].Tools != 2 || strings.Join(start.Tools, ",") != "srv__ping,srv__status" {
			t.Errorf("session_start does not name the model, the server and the tools offered: %+v\n%s", start, r)
		}
		if end.Type != "session_end" || end.Result == nil || *end.Result != "The answer is 42." || end.DurationMs == nil || *end.DurationMs < 0 || end.Steps != 2 {
			t.Errorf("session_end lacks result, duration or steps: %+v\n%s", end, r)
		}
		results := 0
		for _, e := range events {
			if e.Type == "tool_result" {
				results++
				if e.Server != "srv" || (e.Tool != "status" && e.Tool != "ping") {
					t.Errorf("tool_result does not name its server and tool: %+v", e)
				}
			}
		}
		if results != 2 {
			t.Errorf("%d tool results, want 2\n%s", results, r)
		}
		model.wantNoFailures(t)
	})

	t.Run("text pairs calls with results", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		r := run(t, nil, "--config", config(t, model), "run", "-p", "what is it?")
		wantCode(t, r, 0)
		for _, tool := range []string{"status", "ping"} {
			m := regexp.MustCompile(`→ \[(\d)\] srv/` + tool + ` `).FindStringSubmatch(r.stderr)
			if m == nil {
				t.Fatalf("stderr does not name the call to %s\n%s", tool, r)
			}
			if !strings.Contains(r.stderr, "← ["+m[1]+"] srv/"+tool+" ok: ") {
				t.Errorf("the result of call [%s] srv/%s is not paired with it\n%s", m[1], tool, r)
			}
		}
	})

	t.Run("system prompt from the flag and the config", func(t *testing.T) {
		t.Parallel()
		for _, viaFlag := range []bool{true, false} {
			model := rtStartModel(t, modeltest.Script{rtText("ok")})
			cfg := obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, "")}}
			args := []string{"run", "hi"}
			if viaFlag {
				args = append(args, "--system-prompt", "You are terse.")
			} else {
				cfg["llm"].(obj)["systemPrompt"] = "You are terse."
			}
			r := run(t, nil, append([]string{"--config", writeConfig(t, cfg)}, args...)...)
			wantCode(t, r, 0)
			msgs := model.recording(t).MessagesOf(0)
			if len(msgs) == 0 || msgs[0].Role != "system" || msgs[0].Text() != "You are terse." {
				t.Errorf("flag %v: the first message sent is %+v, want the system prompt", viaFlag, msgs)
			}
		}
	})
}

func TestRunWarnsWhenTheModelGetsNoTools(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "drop_everything", "inputSchema": obj{"type": "object"}}})
	model := rtStartModel(t, modeltest.Script{rtText("nothing to do")})
	// strict: every unclassified tool is hidden at trust level 1.
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"srv": stdioServer(tools, "")},
		"approvals": obj{"unclassified": "strict"}})
	r := run(t, nil, "--config", cfg, "run", "hi")
	wantCode(t, r, 0)
	if !strings.Contains(r.stderr, "the model is offered no tools: 1 hidden, 0 excluded") || !strings.Contains(r.stderr, "agenthost tools") {
		t.Errorf("run did not warn that the model gets no tools\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "tools")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "1 tools: 0 active, 1 hidden, 0 excluded.") || !strings.Contains(r.stdout, "Most common reason (1 of 1 not offered):") {
		t.Errorf("tools does not end with a summary\n%s", r)
	}
}

func TestServersIsAHealthCheck(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "ping", "inputSchema": obj{"type": "object"}}})
	healthy := writeConfig(t, obj{"mcpServers": obj{"srv": stdioServer(tools, "")}})
	wantCode(t, run(t, nil, "--config", healthy, "servers"), 0)

	broken := writeConfig(t, obj{"mcpServers": obj{
		"srv":     stdioServer(tools, ""),
		"missing": obj{"command": filepath.Join(t.TempDir(), "no-such-server"), "connectTimeout": "2s"},
	}})
	r := run(t, nil, "--config", broken, "servers")
	wantCode(t, r, 6)
	if n := strings.Count(r.stdout+r.stderr, "no-such-server"); n != 1 {
		t.Errorf("the missing server's error is printed %d times, want once\n%s", n, r)
	}
}

func TestVersionNamesCommitAndGo(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := run(t, nil, args...)
		wantCode(t, r, 0)
		if !regexp.MustCompile(`^agenthost \S+ \(commit \S+(, modified)?, ` + regexp.QuoteMeta(runtime.Version()) + `\)\n$`).MatchString(r.stdout) {
			t.Errorf("%v: %q", args, r.stdout)
		}
	}
}

func TestNoConfigFileSaysWhereItLooked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(agenthostBin, "servers")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "no config file found (searched agenthost.yaml, "+filepath.Join(dir, "xdg", "agenthost", "config.yaml")+")") {
		t.Errorf("no word of the paths searched:\n%s", out)
	}
}
