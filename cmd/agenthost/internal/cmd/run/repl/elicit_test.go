package repl

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
)

func TestTerminalElicitation(t *testing.T) {
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"ok":    map[string]any{"type": "boolean"},
			"count": map[string]any{"type": "integer"},
			"note":  map[string]any{"type": "string"},
		},
		"required": []any{"ok", "count"},
	}
	req := mcp.ElicitationRequest{}
	req.Params.Message = "Confirm?"
	req.Params.RequestedSchema = schema
	tests := []struct {
		name    string
		input   string
		action  mcp.ElicitationResponseAction
		content map[string]any
	}{
		{"accept with retry on bad input", "x\n3\n\nmaybe\nyes\ny\n", mcp.ElicitationResponseActionAccept,
			map[string]any{"count": int64(3), "ok": true}},
		{"declined at the end", "7\n\nno\nn\n", mcp.ElicitationResponseActionDecline, nil},
		{"end of input declines", "", mcp.ElicitationResponseActionDecline, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := newTerminalElicitation(terminal.NewInputAsker(terminal.NewInput(strings.NewReader(tc.input)), &out))
			res, err := e.ask(context.Background(), "srv", req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Action != tc.action {
				t.Fatalf("action %s, want %s\n%s", res.Action, tc.action, out.String())
			}
			if tc.content != nil {
				got, _ := res.Content.(map[string]any)
				for k, v := range tc.content {
					if got[k] != v {
						t.Errorf("%s = %#v, want %#v", k, got[k], v)
					}
				}
			}
			if !strings.Contains(out.String(), "[srv asks] Confirm?") {
				t.Errorf("question not shown: %q", out.String())
			}
		})
	}
}
