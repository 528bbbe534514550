package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hookScript is the absolute path of a hook script in testdata/hooks.
func hookScript(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "hooks", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A Claude Code-style PreToolUse script denies one tool and a PostToolUse
// script redacts another's result, through the binary; the audit records
// name the hooks.
func TestHooksClaudeCodeScripts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		ftPlainTool("get_order", obj{"text": "order 7: card 4111-1111-1111-1111"}),
		ftPlainTool("delete_order", obj{"text": "deleted"}),
		ftPlainTool("list_orders", obj{"text": "7, 8"}),
	})
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"shop": stdioServer(tools, "")},
		"audit":      obj{"path": audit},
		"hooks": obj{
			"PreToolUse": []obj{{"matcher": "mcp__.*", "hooks": []obj{
				{"type": "command", "command": hookScript(t, "deny-delete.sh"), "timeout": 10},
			}}},
			"PostToolUse": []obj{{"matcher": "mcp__shop__get_order", "hooks": []obj{
				{"type": "command", "command": hookScript(t, "redact-cards.sh"), "timeout": 10},
			}}},
		},
	})
	env := baseEnv(t)

	r := run(t, env, "--config", cfg, "call", "shop", "delete_order", "--json")
	msg := wantCallError(t, r, 3, "denied")
	if !strings.Contains(msg, "hook:deny-delete.sh") {
		t.Errorf("the denial does not name the hook: %q", msg)
	}

	r = run(t, env, "--config", cfg, "call", "shop", "get_order", "--json")
	wantCode(t, r, 0)
	if got := decodeStdout[callDoc](t, r).text(); got != "order 7: card [redacted by hook]" {
		t.Errorf("get_order result %q, want the hook's redaction\n%s", got, r)
	}

	r = run(t, env, "--config", cfg, "call", "shop", "list_orders", "--json")
	wantCode(t, r, 0)
	if got := decodeStdout[callDoc](t, r).text(); got != "7, 8" {
		t.Errorf("list_orders result %q, want it unchanged", got)
	}

	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, want := range []string{`"rules":["hook:deny-delete.sh"]`, `"hook:redact-cards.sh:replaced"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}
}

// Hooks see secure parameter names, never their values: a hook that logs
// its whole input, before and after a call whose server echoes the secure
// values back.
func TestHooksNeverSeeSecureValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	canary := newCanary(t, "hook")
	tools := writeJSON(t, dir, "tools.json", []obj{
		ftSecureTool("lookup", obj{"echoSecure": true, "text": "found"}, "token"),
	})
	logFile := filepath.Join(dir, "hook-input.log")
	logHook := obj{"type": "command", "command": hookScript(t, "log-input.sh"), "env": obj{"HOOK_LOG": logFile}}
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"vault": stdioServer(tools, "")},
		"bindings":   []obj{{"server": "vault", "params": obj{"token": obj{"env": "E2E_HOOK_TOKEN"}}}},
		"hooks": obj{
			"PreToolUse":  []obj{{"hooks": []obj{logHook}}},
			"PostToolUse": []obj{{"hooks": []obj{logHook}}},
		},
	})
	r := run(t, append(baseEnv(t), "E2E_HOOK_TOKEN="+canary), "--config", cfg, "call", "vault", "lookup", "--args", `{"n":1}`, "--json")
	wantCode(t, r, 0)
	wantNoCanary(t, r, canary)
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatalf("the hooks did not run: %v", err)
	}
	seen := string(data)
	if strings.Contains(seen, canary) {
		t.Fatalf("a hook saw the secure value:\n%s", seen)
	}
	for _, want := range []string{`"hook_event_name":"PreToolUse"`, `"hook_event_name":"PostToolUse"`, `"secureParams":["token"]`, `"tool_name":"mcp__vault__lookup"`} {
		if !strings.Contains(seen, want) {
			t.Errorf("hook input lacks %s:\n%s", want, seen)
		}
	}
}

// A PermissionRequest hook votes as a named approver: with --approve auto
// (one approver) it makes a two-approver quorum; its deny vetoes.
func TestHooksPermissionRequest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		ftPlainTool("move_order", obj{"text": "moved"}),
		ftPlainTool("drop_orders", obj{"text": "dropped"}),
	})
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"shop": stdioServer(tools, "")},
		"audit":      obj{"path": audit},
		"approvals": obj{
			"catalogue": []obj{{"server": "*", "tool": "*", "metadata": obj{
				"category": "mutate", "riskLevel": "high", "blastRadius": "item", "reversibility": "manual",
				"approvalRecommendation": "multi", "minTrustLevel": 1,
			}}},
			"rules": []obj{{"id": "two-people", "when": obj{"category": []string{"mutate"}}, "decide": "ask", "approvers": 2}},
		},
		"hooks": obj{"PermissionRequest": []obj{{"matcher": "mcp__shop__.*", "hooks": []obj{
			{"type": "command", "command": hookScript(t, "change-freeze.sh"), "approver": "freeze-bot"},
		}}}},
	})
	env := baseEnv(t)
	r := run(t, env, "--config", cfg, "call", "shop", "move_order", "--approve", "auto", "--json")
	wantCode(t, r, 0)
	r = run(t, env, "--config", cfg, "call", "shop", "drop_orders", "--approve", "auto", "--json")
	wantCallError(t, r, 3, "denied")
	data, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	if !strings.Contains(log, `{"id":"freeze-bot","decision":"allow"`) || !strings.Contains(log, `{"id":"freeze-bot","decision":"deny"`) {
		t.Errorf("the audit log lacks the hook's votes:\n%s", log)
	}
	// Without anyone else to approve, the hook's allow is not enough.
	r = run(t, env, "--config", cfg, "call", "shop", "move_order", "--approve", "deny", "--json")
	wantCallError(t, r, 3, "denied")
}
