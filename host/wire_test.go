package host

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestAttachSecureArguments(t *testing.T) {
	call := &secureCall{tool: "execute_sql", values: map[string]any{"instance": "c"},
		encoded: json.RawMessage(`{"instance":"c"}`), headers: map[string]string{"Mcp-Param-Region": "eu"}}
	typed := mcp.CallToolParams{Name: "execute_sql", Arguments: json.RawMessage(`{"query":"x"}`)}
	fields := map[string]json.RawMessage{"name": json.RawMessage(`"execute_sql"`), "arguments": json.RawMessage(`{"query":"x"}`),
		"_meta": json.RawMessage(`{"k":1}`)}
	tests := []struct {
		name   string
		params any
		sends  bool
	}{
		{"typed params (2025-11-25)", typed, true},
		{"field map (2026-07-28)", fields, true},
		{"another tool", mcp.CallToolParams{Name: "drop_all"}, false},
		{"another tool, field map", map[string]json.RawMessage{"name": json.RawMessage(`"drop_all"`)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := http.Header{"X-Keep": {"1"}}
			req := transport.JSONRPCRequest{Method: "tools/call", Params: tc.params, Header: orig}
			got, err := attachSecureArguments(req, call)
			if err != nil {
				t.Fatal(err)
			}
			encoded, _ := json.Marshal(got.Params)
			var decoded map[string]json.RawMessage
			if err := json.Unmarshal(encoded, &decoded); err != nil {
				t.Fatalf("params not an object: %s", encoded)
			}
			_, has := decoded["secureArguments"]
			if has != tc.sends {
				t.Fatalf("secureArguments present = %v, want %v: %s", has, tc.sends, encoded)
			}
			if !tc.sends {
				return
			}
			if string(decoded["secureArguments"]) != `{"instance":"c"}` || string(decoded["arguments"]) != `{"query":"x"}` {
				t.Errorf("params: %s", encoded)
			}
			if got.Header.Get("Mcp-Param-Region") != "eu" || got.Header.Get("X-Keep") != "1" {
				t.Errorf("headers: %v", got.Header)
			}
			// The caller's params and headers are never modified: mcp-go
			// reuses them on retries.
			if orig.Get("Mcp-Param-Region") != "" {
				t.Errorf("original headers modified")
			}
			if _, leaked := fields["secureArguments"]; leaked {
				t.Errorf("original field map modified")
			}
		})
	}
}
