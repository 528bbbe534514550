package host

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestAttachSecureArguments(t *testing.T) {
	call := &secureCall{tool: "execute_sql", values: map[string]any{"instance": "c"},
		encoded: json.RawMessage(`{"instance":"c"}`), headers: map[string]string{"Mcp-Param-Region": "eu"},
		quotedTool: json.RawMessage(`"execute_sql"`)}
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
			got, attached, err := attachSecureArguments(req, call)
			if err != nil {
				t.Fatal(err)
			}
			if attached != tc.sends {
				t.Fatalf("attached = %v, want %v", attached, tc.sends)
			}
			if attached {
				got = withSecureHeaders(got, call)
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

// recordingTransport keeps the last request; httpRecordingTransport is the
// same as an HTTPConnection.
type recordingTransport struct {
	transport.Interface
	last transport.JSONRPCRequest
}

func (r *recordingTransport) SendRequest(_ context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	r.last = req
	return &transport.JSONRPCResponse{Result: json.RawMessage(`{}`)}, nil
}

type httpRecordingTransport struct{ *recordingTransport }

func (httpRecordingTransport) SetProtocolVersion(string) {}

// Secure values' headers go out on HTTP only, in the 2026-07-28 era only,
// and only with the values.
func TestSecureHeadersOnlyOverHTTP(t *testing.T) {
	call := &secureCall{tool: "execute_sql", values: map[string]any{"region": "eu"},
		encoded: json.RawMessage(`{"region":"eu"}`), headers: map[string]string{"Mcp-Param-Region": "eu"},
		quotedTool: json.RawMessage(`"execute_sql"`)}
	for _, tc := range []struct {
		name, tool, version string
		http, want          bool
	}{
		{"http", "execute_sql", "2026-07-28", true, true},
		{"http, 2025-11-25", "execute_sql", "2025-11-25", true, false},
		{"stdio", "execute_sql", "2026-07-28", false, false},
		{"http, another tool", "drop_all", "2026-07-28", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordingTransport{}
			var inner transport.Interface = rec
			if tc.http {
				inner = httpRecordingTransport{rec}
			}
			w := newWireTransport(inner, nil, nil)
			if v, ok := w.(interface{ SetProtocolVersion(string) }); ok {
				v.SetProtocolVersion(tc.version)
			}
			params := map[string]json.RawMessage{"name": json.RawMessage(`"` + tc.tool + `"`)}
			ctx := withSecureCall(context.Background(), call)
			if _, err := w.SendRequest(ctx, transport.JSONRPCRequest{Method: "tools/call", Params: params}); err != nil {
				t.Fatal(err)
			}
			if got := rec.last.Header.Get("Mcp-Param-Region") != ""; got != tc.want {
				t.Errorf("Mcp-Param-Region sent = %v, want %v (headers %v)", got, tc.want, rec.last.Header)
			}
		})
	}
}
