//go:build unix

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// claudeDesktopConfig is a Claude Desktop mcpServers file with the npm
// reference servers (filesystem on root, memory, everything) and nothing
// else: no approvals section. The model settings are added to it, as a new
// user would.
func claudeDesktopConfig(t *testing.T, model *rtModel, root string) string {
	t.Helper()
	node, fs := ftPeer(t, "server-filesystem")
	_, memory := ftPeer(t, "server-memory")
	_, everything := everythingServer(t)
	doc := obj{
		"mcpServers": obj{
			"filesystem": obj{"command": node, "args": []string{fs, root}},
			"memory":     obj{"command": node, "args": []string{memory}, "env": obj{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.json")}},
			"everything": obj{"command": node, "args": []string{everything}},
		},
	}
	if model != nil {
		doc["llm"] = model.llm()
	}
	return writeJSON(t, t.TempDir(), "claude_desktop_config.json", doc)
}

// TestFirstRunWithAClaudeDesktopConfig: with no approvals section every tool
// of the three reference servers is offered; a non-interactive run is
// denied with a message naming the fix; on a terminal, one y lets the model
// list the directory.
func TestFirstRunWithAClaudeDesktopConfig(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, "hello.txt", []byte("hi\n"))
	listing := rtCall("c1", "filesystem__list_directory", obj{"path": root})
	script := modeltest.Script{{Text: "Let me look.", ToolCalls: []modeltest.ToolCall{listing}}, rtText("Done.")}

	t.Run("every tool is offered", func(t *testing.T) {
		t.Parallel()
		r := run(t, nil, "--config", claudeDesktopConfig(t, nil, root), "tools", "--json")
		wantCode(t, r, 0)
		doc := decodeStdout[toolsDoc](t, r)
		total := 0
		for _, name := range []string{"filesystem", "memory", "everything"} {
			for _, tl := range doc.server(t, name).Tools {
				total++
				if tl.Status != "active" {
					t.Errorf("%s/%s is %s: %s", name, tl.Name, tl.Status, reasonOf(tl))
				}
			}
		}
		if total < 20 {
			t.Errorf("only %d tools listed\n%s", total, r)
		}
	})

	t.Run("nobody to ask: denied, naming the fix", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		r := run(t, nil, "--config", claudeDesktopConfig(t, model, root), "run", "what is in the directory?", "--output-format", "agenthost-stream-json")
		wantCode(t, r, 0)
		events := rtEvents(t, r)
		var approval map[string]any
		for _, e := range events {
			if e.Type == "approval" {
				_ = json.Unmarshal([]byte(e.raw), &approval)
			}
		}
		if approval == nil || approval["outcome"] != "rejected" {
			t.Fatalf("no rejected approval event\n%s", r)
		}
		explanation, _ := approval["explanation"].(string)
		for _, want := range []string{"unclassified", "agenthost policy init", "approvals.unclassified"} {
			if !strings.Contains(explanation, want) {
				t.Errorf("the denial does not name %q: %q", want, explanation)
			}
		}
		results := rtOfType(events, "tool_result")
		if len(results) != 1 || results[0].IsError == nil || !*results[0].IsError || strings.Contains(results[0].text(), "hello.txt") {
			t.Errorf("the listing ran or was not refused: %+v", results)
		}
		// What the model was told names no operator detail.
		if text := results[0].text(); strings.Contains(text, "policy init") {
			t.Errorf("the model is told the operator's fix: %q", text)
		}
	})

	t.Run("policy init into the Claude Desktop file", func(t *testing.T) {
		t.Parallel()
		cfg := claudeDesktopConfig(t, nil, root)
		before, err := os.ReadFile(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := run(t, nil, "--config", cfg, "policy", "init")
		wantCode(t, r, 0)
		var printed struct {
			Approvals struct {
				Catalogue []obj `json:"catalogue"`
				Rules     []obj `json:"rules"`
			} `json:"approvals"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &printed); err != nil || len(printed.Approvals.Catalogue) < 20 || len(printed.Approvals.Rules) == 0 {
			t.Fatalf("policy init on a JSON config does not print a JSON approvals block (%v)\n%s", err, r)
		}
		r = run(t, nil, "--config", cfg, "policy", "init", "--write")
		wantCode(t, r, 0)
		after, _ := os.ReadFile(cfg)
		if !strings.HasPrefix(string(after), strings.TrimRight(string(before[:strings.LastIndex(string(before), "}")]), " \n")) {
			t.Errorf("the file's own text was not kept:\n%s", after)
		}
		// Reads run without asking; writes ask, and nobody is here to answer.
		r = run(t, nil, "--config", cfg, "call", "filesystem", "list_directory", "--args", mustJSON(obj{"path": root}), "--approve", "deny")
		wantCode(t, r, 0)
		if !strings.Contains(r.stdout, "hello.txt") {
			t.Errorf("list_directory did not list\n%s", r)
		}
		// JSON has no comments: the entries to review say so in a member.
		if !strings.Contains(string(after), `"review": "from the server's hints: review"`) {
			t.Errorf("the JSON catalogue carries no review marker\n%s", after)
		}
		// A second --write adds nothing and leaves the file alone.
		r = run(t, nil, "--config", cfg, "policy", "init", "--write")
		wantCode(t, r, 0)
		if again, _ := os.ReadFile(cfg); !strings.Contains(r.stdout, "nothing to add") || string(again) != string(after) {
			t.Errorf("a second --write on the JSON config\n%s", r)
		}
		r = run(t, nil, "--config", cfg, "call", "filesystem", "write_file", "--args", mustJSON(obj{"path": filepath.Join(root, "new.txt"), "content": "x"}), "--approve", "deny")
		wantCode(t, r, 3)
		if _, err := os.Stat(filepath.Join(root, "new.txt")); err == nil {
			t.Error("write_file ran without approval")
		}
	})

	t.Run("one y on a terminal", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		term := rtStartOnTerminal(t, "--config", claudeDesktopConfig(t, model, root), "run", "what is in the directory?")
		term.waitOutput(t, 30*time.Second, "server says (untrusted)")
		term.waitOutput(t, 10*time.Second, "Allow? [y] once  [n] deny: ")
		if _, err := term.pty.Write([]byte("y\n")); err != nil {
			t.Fatal(err)
		}
		if code := term.wait(t, 30*time.Second); code != 0 {
			t.Fatalf("exit code %d\n%s", code, term.output())
		}
		out := term.output()
		if !strings.Contains(out, "unclassified: nobody classified this tool") || !strings.Contains(out, "Done.") {
			t.Errorf("the prompt or the answer is missing:\n%s", out)
		}
		// list_directory is unclassified, not destructive: the fail-closed
		// bucket is not shown as its risk.
		if !strings.Contains(out, "risk:       unclassified") || strings.Contains(out, "destroy, critical") {
			t.Errorf("the prompt presents the fail-closed bucket as the tool's risk:\n%s", out)
		}
		rec := model.recording(t)
		if len(rec) != 2 {
			t.Fatalf("%d model requests, want 2", len(rec))
		}
		msgs := rec.MessagesOf(1)
		if last := msgs[len(msgs)-1]; last.Role != "tool" || !strings.Contains(last.Text(), "hello.txt") {
			t.Errorf("the model was not given the listing: %+v", last)
		}
	})
}
