package host

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/mcptest"
)

// The host lists raw, so mcp-go never learns the definitions: the host must
// itself mirror x-mcp-header arguments of inputSchema into Mcp-Param-*
// headers (2026-07-28 over HTTP only) and exclude a tool whose annotations
// are invalid.
const headerTools = `[
 {"name": "routed", "inputSchema": {"type": "object", "properties": {
    "zone": {"type": "string", "x-mcp-header": "Zone"},
    "shard": {"type": "integer", "x-mcp-header": "Shard"},
    "q": {"type": "string"}}}},
 {"name": "plain", "inputSchema": {"type": "object", "properties": {"zone": {"type": "string"}}}},
 {"name": "bad_header", "inputSchema": {"type": "object", "properties": {
    "filter": {"type": "object", "x-mcp-header": "Filter"}}}}
]`

func TestInputSchemaHeaders(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			h, srv, _ := testHost(t, era, mcptest.Options{ToolsJSON: []byte(headerTools)})
			ctx := context.Background()
			h.Connect(ctx)
			snap := h.Server("db")
			if snap.Status != StatusConnected || snap.ProtocolVersion != era {
				t.Fatalf("snapshot: %s %s %s", snap.Status, snap.ProtocolVersion, snap.Error)
			}
			bad := snap.Tool("bad_header")
			if bad == nil || bad.Status != ToolExcluded || !strings.Contains(bad.Reason, "x-mcp-header") {
				t.Fatalf("bad_header: want excluded for its x-mcp-header, got %+v", bad)
			}
			s := h.NewSession(SessionOptions{})
			defer s.Close()
			for _, tv := range s.View(ctx).Tools["db"] {
				if tv.Tool.Name == "bad_header" && tv.Status == ToolActive {
					t.Fatal("bad_header is offered to the model")
				}
			}

			for _, call := range []struct {
				tool, args string
				want       map[string]string // header -> value; "" must be absent
			}{
				{"routed", `{"zone":"eu-west-9","shard":42,"q":"x"}`, map[string]string{"Mcp-Param-Zone": "eu-west-9", "Mcp-Param-Shard": "42"}},
				{"routed", `{"q":"only the body"}`, map[string]string{"Mcp-Param-Zone": "", "Mcp-Param-Shard": ""}},
				// SEP-2243: a null value is not mirrored (and the call is
				// made: null for an optional property is an omitted one);
				// a value a header cannot carry as it is goes base64-encoded.
				{"routed", `{"zone":null,"shard":7,"q":"x"}`, map[string]string{"Mcp-Param-Zone": "", "Mcp-Param-Shard": "7"}},
				{"routed", `{"zone":" padded ","q":"x"}`, map[string]string{"Mcp-Param-Zone": "=?base64?IHBhZGRlZCA=?="}},
				{"routed", `{"zone":"Hello, 世界","q":"x"}`, map[string]string{"Mcp-Param-Zone": "=?base64?SGVsbG8sIOS4lueVjA==?="}},
				{"plain", `{"zone":"eu-west-9"}`, map[string]string{"Mcp-Param-Zone": ""}},
			} {
				srv.Recording().Reset()
				res, err := s.CallTool(ctx, "db", call.tool, json.RawMessage(call.args))
				if err != nil {
					t.Fatalf("%s %s: %v", call.tool, call.args, err)
				}
				if res.IsError() {
					t.Fatalf("%s %s: isError result %+v", call.tool, call.args, res.Result)
				}
				msgs := srv.Recording().Messages("tools/call")
				if len(msgs) != 1 {
					t.Fatalf("%d tools/call recorded", len(msgs))
				}
				for name, want := range call.want {
					if era != "2026-07-28" {
						want = "" // nothing is mirrored before 2026-07-28
					}
					if got := headerValue(msgs[0].Headers, name); got != want {
						t.Errorf("%s %s: header %s = %q, want %q", call.tool, call.args, name, got, want)
					}
				}
			}
		})
	}
}
