package run

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
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

// --approve auto answers with the defaults of the requested schema
// (SEP-1034), of every type, and nothing for a property without one.
func TestSchemaDefaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema any
		want   string
	}{
		{"every type", json.RawMessage(`{"type":"object","properties":{
			"name":{"type":"string","default":"John Doe"},"age":{"type":"integer","default":30},
			"score":{"type":"number","default":95.5},"status":{"type":"string","enum":["active","inactive"],"default":"active"},
			"verified":{"type":"boolean","default":true},"note":{"type":"string"}}}`),
			`{"age":30,"name":"John Doe","score":95.5,"status":"active","verified":true}`},
		{"a map schema", map[string]any{"properties": map[string]any{"n": map[string]any{"default": 1}}}, `{"n":1}`},
		{"no properties", json.RawMessage(`{"type":"object"}`), `{}`},
		{"a null default is none", json.RawMessage(`{"properties":{"x":{"default":null}}}`), `{}`},
		{"not a schema", json.RawMessage(`[1,2]`), `{}`},
		{"nil", nil, `{}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(cmdutil.SchemaDefaults(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("schemaDefaults = %s, want %s", got, tc.want)
			}
		})
	}
}

func FuzzSchemaDefaults(f *testing.F) {
	for _, seed := range []string{`{"properties":{"a":{"default":1}}}`, `{"properties":[]}`, `null`, `{"properties":{"a":{"default":{"b":[1]}}}}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		// Whatever the server sends, the answer is a JSON object.
		if _, err := json.Marshal(cmdutil.SchemaDefaults(json.RawMessage(raw))); err != nil {
			t.Fatalf("the answer does not encode: %v", err)
		}
	})
}
