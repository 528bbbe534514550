package serve

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
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

func frameOf(n int) []byte { return []byte(strings.Repeat("x", n)) }

// TestEventLogBounds: a log drops its oldest events past maxTurnEvents
// and past the session's bytes (never its newest); past the total, logs of
// ended turns lose theirs first (the longest ended first), then the log
// adding drops its own oldest; a released log no longer counts.
func TestEventLogBounds(t *testing.T) {
	type step struct {
		log    int  // which log (0, 1, 2)
		frame  int  // append a frame of this size, unless
		finish bool // finish the log
		free   bool // release the log
	}
	tests := []struct {
		name      string
		lim       eventLimits
		steps     []step
		wantFirst []int64 // each log's first kept event number
		wantKept  []int   // each log's kept events
		wantUsed  int64
	}{
		{"session bound drops the oldest", eventLimits{maxSession: 1000, maxTotal: 1 << 20},
			[]step{{0, 400, false, false}, {0, 400, false, false}, {0, 400, false, false}},
			[]int64{3, 1, 1}, []int{1, 0, 0}, 400},
		{"the newest is kept even alone past the bound", eventLimits{maxSession: 1000, maxTotal: 1 << 20},
			[]step{{0, 100, false, false}, {0, 5000, false, false}},
			[]int64{2, 1, 1}, []int{1, 0, 0}, 5000},
		{"total takes from ended turns first, longest ended first", eventLimits{maxSession: 2000, maxTotal: 2000},
			[]step{{0, 600, false, false}, {0, 0, true, false}, {1, 600, false, false}, {1, 0, true, false}, {2, 600, false, false}, {2, 600, false, false}},
			[]int64{2, 1, 1}, []int{0, 1, 2}, 1800},
		{"then the turn adding drops its own", eventLimits{maxSession: 1500, maxTotal: 1500},
			[]step{{0, 700, false, false}, {1, 700, false, false}, {1, 700, false, false}},
			[]int64{1, 2, 1}, []int{1, 1, 0}, 1400},
		{"a released log no longer counts", eventLimits{maxSession: 1000, maxTotal: 1000},
			[]step{{0, 900, false, false}, {0, 0, true, false}, {0, 0, false, true}, {1, 900, false, false}},
			[]int64{1, 1, 1}, []int{1, 1, 0}, 900},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newEventBudget(tc.lim)
			logs := []*eventLog{b.newLog(), b.newLog(), b.newLog()}
			for _, st := range tc.steps {
				switch l := logs[st.log]; {
				case st.finish:
					l.finish()
				case st.free:
					l.release()
				default:
					l.append(frameOf(st.frame))
				}
			}
			for i, l := range logs {
				if l.first != tc.wantFirst[i] || len(l.events) != tc.wantKept[i] {
					t.Errorf("log %d keeps %d events from %d, want %d from %d", i, len(l.events), l.first, tc.wantKept[i], tc.wantFirst[i])
				}
			}
			if got := b.used.Load(); got != tc.wantUsed {
				t.Errorf("budget counts %d bytes, want %d", got, tc.wantUsed)
			}
		})
	}
}

// TestEventLogCountBound: past maxTurnEvents the oldest are dropped; a
// reader behind them learns so, and a slice handed out is never changed.
func TestEventLogCountBound(t *testing.T) {
	l := newEventBudget(eventLimits{maxSession: 1 << 30, maxTotal: 1 << 30}).newLog()
	for i := 1; i <= maxTurnEvents; i++ {
		l.append([]byte(strconv.Itoa(i)))
	}
	held, _, _, _, _ := l.since(0)
	l.append([]byte(strconv.Itoa(maxTurnEvents + 1)))
	if string(held[0].frame) != "1" || len(held) != maxTurnEvents {
		t.Fatalf("a slice handed to a reader changed: it starts %q, holds %d", held[0].frame, len(held))
	}
	if _, _, _, _, gone := l.since(0); !gone {
		t.Fatal("a reader behind dropped events was not told")
	}
	evs, first, _, _, gone := l.since(l.first - 1)
	if gone || first != maxTurnEvents/4+2 || string(evs[len(evs)-1].frame) != strconv.Itoa(maxTurnEvents+1) {
		t.Fatalf("after the drop: first %d, gone %v, last %q", first, gone, evs[len(evs)-1].frame)
	}
}
