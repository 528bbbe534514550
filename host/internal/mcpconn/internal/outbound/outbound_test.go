package outbound

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestAttachSecureArguments(t *testing.T) {
	call, err := NewSecureArgs("execute_sql", map[string]any{"instance": "c"}, map[string]string{"Mcp-Param-Region": "eu"})
	if err != nil {
		t.Fatal(err)
	}
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
		{"field map, name escaped otherwise", map[string]json.RawMessage{"name": json.RawMessage(`"execute\u005fsql"`)}, true},
		{"field map, another tool escaped", map[string]json.RawMessage{"name": json.RawMessage(`"drop\u005fall"`)}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			orig := http.Header{"X-Keep": {"1"}}
			req := transport.JSONRPCRequest{Method: "tools/call", Params: tc.params, Header: orig}
			got, attached, err := AttachSecureArguments(req, call)
			if err != nil {
				t.Fatal(err)
			}
			if attached != tc.sends {
				t.Fatalf("attached = %v, want %v", attached, tc.sends)
			}
			if attached {
				got = WithSecureHeaders(got, call)
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
			if args, ok := decoded["arguments"]; string(decoded["secureArguments"]) != `{"instance":"c"}` || (ok && string(args) != `{"query":"x"}`) {
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

// Secure values' headers go out on HTTP only, in the 2026-07-28 era only,
// and only with the values.
// TestSecureArgsNamesAreTheCallersOwn: the names a call result reports
// are sorted, and a caller changing them (CallResult.SecureParams is
// theirs) cannot change what later calls report or audit.
func TestSecureArgsNamesAreTheCallersOwn(t *testing.T) {
	call, err := NewSecureArgs("t", map[string]any{"tenant_id": "a", "instance": "b", "region": "c"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"instance", "region", "tenant_id"}
	got := call.Names()
	if !slices.Equal(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	got[0] = "changed by the caller"
	_ = append(got[:1], "appended")
	if again := call.Names(); !slices.Equal(again, want) {
		t.Fatalf("after the caller changed a result's names: %v, want %v", again, want)
	}
	if (*SecureArgs)(nil).Names() != nil {
		t.Error("a call without secure values reports names")
	}
}
