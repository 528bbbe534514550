package config

import (
	"strings"
	"testing"
)

// The hooks section reads Claude Code's settings shape, from YAML and from
// a Claude Code settings.json fragment alike.
func TestHooksSection(t *testing.T) {
	docs := map[string]string{
		"yaml": `
hooks:
  PreToolUse:
    - matcher: "mcp__orders__.*"
      hooks:
        - {type: command, command: ./hooks/guard.sh, timeout: 5, id: guard}
  PostToolUse:
    - hooks: [{type: command, command: "redact --strict", sha256: ""}]
`,
		"json": `{"hooks": {"PreToolUse": [{"matcher": "mcp__orders__.*", "hooks": [{"type": "command", "command": "./hooks/guard.sh", "timeout": 5, "id": "guard"}]}],
 "PostToolUse": [{"hooks": [{"type": "command", "command": "redact --strict"}]}]}}`,
	}
	for format, doc := range docs {
		t.Run(format, func(t *testing.T) {
			cfg, err := Parse([]byte(doc), format, "cfg."+format)
			if err != nil {
				t.Fatal(err)
			}
			pre := cfg.Hooks.PreToolUse
			if len(pre) != 1 || pre[0].Matcher != "mcp__orders__.*" || pre[0].Hooks[0].Command != "./hooks/guard.sh" || pre[0].Hooks[0].Timeout != 5 || pre[0].Hooks[0].ID != "guard" {
				t.Fatalf("PreToolUse = %+v", pre)
			}
			if post := cfg.Hooks.PostToolUse; len(post) != 1 || post[0].Hooks[0].Command != "redact --strict" {
				t.Fatalf("PostToolUse = %+v", post)
			}
		})
	}
}

func TestHooksErrorsNameTheKey(t *testing.T) {
	doc := `
hooks:
  PreToolUse:
    - matcher: "("
      hooks: [{type: http, command: x}]
`
	_, err := Parse([]byte(doc), "yaml", "agenthost.yaml")
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"hooks.PreToolUse[0].matcher", "hooks.PreToolUse[0].hooks[0].type"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}
