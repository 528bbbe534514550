package serve

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// liveHeap is the heap in use after a full collection.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// bigResultServer is an MCP server (mcp-go's, in process) whose tool
// "dump" (the test's catalogue classifies it a low-risk read) answers with size bytes of text. It keeps nothing of what it
// sends, so the heap a test measures is the host's and serve's.
func bigResultServer(t *testing.T, size int) {
	srv := server.NewMCPServer("big", "1.0.0", server.WithToolCapabilities(false))
	srv.AddTool(mcp.NewTool("dump"),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(strings.Repeat("r", size)), nil
		})
	fixtureTransports = map[string]host.TransportFactory{"big": func() (transport.Interface, error) {
		return transport.NewInProcessTransport(srv), nil
	}}
	t.Cleanup(func() { fixtureTransports = nil })
}

// TestIdleSessionsKeepBoundedEvents: sessions whose turns returned big
// tool results and then sat idle hold a bounded heap: a result's event
// keeps what the model was given (serve.events.maxResultBytes, by default
// limits.maxModelResultBytes), and past serve.events.maxTotalBytes ended
// turns give their events up. The host's transcript keeps the model's cut
// copy only.
func TestIdleSessionsKeepBoundedEvents(t *testing.T) {
	const (
		sessions   = 6
		result     = 3 << 20
		modelSees  = 32 << 10
		perSession = 512 << 10 // transcript, events, session: well under a result
	)
	tests := []struct {
		name       string
		events     config.ServeEvents
		wantResult int // bytes of the tool_result event's text in the stream
	}{
		{"results cut to what the model saw", config.ServeEvents{}, modelSees},
		{"ended turns give way past the total", config.ServeEvents{MaxResultBytes: 64 << 20, MaxTotalBytes: 4 << 20}, result},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bigResultServer(t, result)
			f := newFixtureWith(t, func(c *config.Serve) { c.Events = tc.events }, func(c *config.Config) {
				c.MCPServers["big"] = &config.Server{}
				str := func(v string) *string { return &v }
				c.Approvals.Catalogue = append(c.Approvals.Catalogue, rules.CatalogueEntry{Server: "big", Tool: "dump",
					Metadata: risk.RawMetadata{Category: str("read"), RiskLevel: str("low"), BlastRadius: str("item"),
						Reversibility: str("auto"), ApprovalRecommendation: str("none"), MinTrustLevel: 1}})
				c.Limits.MaxModelResultBytes = modelSees
			})
			f.createSession(nil) // the first session's costs are not the events'
			before := liveHeap()
			for range sessions {
				s := f.createSession(nil)
				resp := f.startTurn(s.ID, "call big__dump {}")
				evs, err := readSSE(resp.Body, nil)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				var got int
				for _, e := range evs {
					if e.name == "tool_result" {
						var ev struct{ Content []mcp.TextContent }
						if err := json.Unmarshal([]byte(e.data), &ev); err != nil || len(ev.Content) != 1 {
							t.Fatalf("tool_result content: %v, %d blocks", err, len(ev.Content))
						}
						got = len(ev.Content[0].Text)
					}
				}
				if got < tc.wantResult || got > tc.wantResult+200 {
					t.Errorf("the tool_result event carries %d bytes, want %d (and a note when cut)", got, tc.wantResult)
				}
			}
			grown := liveHeap() - before
			t.Logf("%d idle sessions of %d MiB results hold %d KiB", sessions, result>>20, grown>>10)
			bound := int64(sessions*perSession) + tc.events.MaxTotalBytes
			if grown > bound {
				t.Fatalf("%d idle sessions hold %d KiB of heap after GC, want at most %d KiB", sessions, grown>>10, bound>>10)
			}
		})
	}
}
