package host

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// recordingObserver records the hooks it is given, as lines.
type recordingObserver struct {
	mu         sync.Mutex
	lines      []string
	reconnects atomic.Int32
}

func (o *recordingObserver) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines = append(o.lines, fmt.Sprintf(format, args...))
}

func (o *recordingObserver) StartTurn(ctx context.Context, t TurnInfo) (context.Context, func(TurnEnd)) {
	o.add("turn %s", t.SessionID)
	return ctx, func(e TurnEnd) { o.add("turn end %s", e.Reason) }
}

func (o *recordingObserver) StartModelRequest(ctx context.Context, r ModelRequestInfo) (context.Context, func(ModelRequestEnd)) {
	o.add("model %s", r.Model)
	return ctx, func(ModelRequestEnd) { o.add("model end") }
}

func (o *recordingObserver) StartToolCall(ctx context.Context, c ToolCallInfo) (context.Context, func(ToolCallEnd)) {
	o.add("tool %s/%s", c.Server, c.Tool)
	return context.WithValue(ctx, traceKey{}, "tool"), func(e ToolCallEnd) { o.add("tool end kind=%q isError=%v", e.ErrorKind, e.IsError) }
}

func (o *recordingObserver) StartMCPRequest(ctx context.Context, r MCPRequestInfo) (context.Context, func(MCPRequestEnd)) {
	o.add("mcp %s %s/%s under %v", r.Method, r.Server, r.Tool, ctx.Value(traceKey{}))
	return context.WithValue(ctx, traceKey{}, "mcp"), func(e MCPRequestEnd) { o.add("mcp end failed=%v code=%d", e.Failed, e.RPCCode) }
}

func (o *recordingObserver) Decision(ctx context.Context, d DecisionInfo) {
	o.add("decision %s %s under %v", d.Result.Decision.Action, d.Result.Outcome, ctx.Value(traceKey{}))
}

func (o *recordingObserver) CredentialResolved(ctx context.Context, e bindings.ResolveEvent) {
	o.add("credential %s %s %s under %v", e.Param, e.Source, e.Cache, ctx.Value(traceKey{}))
}

func (o *recordingObserver) TraceContext(ctx context.Context) (string, string) {
	if ctx.Value(traceKey{}) == "mcp" {
		return "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "k=v"
	}
	return "", ""
}

func (o *recordingObserver) PluginRestarted(context.Context, string) {}

func (o *recordingObserver) ServerReconnected(context.Context, string) { o.reconnects.Add(1) }

type traceKey struct{}

const observedTools = `[
 {"name": "read", "inputSchema": {"type": "object"},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}}, "required": ["instance"]},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}},
 {"name": "crash", "inputSchema": {"type": "object"}, "x-test": {"die": true},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`

// TestObserverHooks: a call is told to the observer as a tool call with,
// under it, its decision, its credential resolutions and its MCP request,
// whose trace context reaches the server in params._meta; a reconnect
// after the server died is told too.
func TestObserverHooks(t *testing.T) {
	var servers []*mcptest.Server
	for range 2 {
		srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(observedTools)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = srv.Close() })
		servers = append(servers, srv)
	}
	var dials atomic.Int32
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {TrustAnnotations: true}},
		Bindings:   []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{"instance": {Value: "checkout"}}}},
		Approvals:  readsAllowed(),
	}
	cfg.ApplyDefaults()
	obs := &recordingObserver{}
	h, err := New(Options{Config: cfg, Observer: obs, Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) {
			n := min(int(dials.Add(1)), len(servers)) - 1
			return servers[n].InProcessTransport(), nil
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	s := h.NewSession(SessionOptions{})
	if _, err := s.CallTool(t.Context(), "db", "read", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tool db/read",
		"decision allow auto_allowed under tool",
		"credential instance value bypass under tool",
		"mcp tools/call db/read under tool",
		"mcp end failed=false code=0",
		`tool end kind="" isError=false`,
	}
	obs.mu.Lock()
	got := append([]string(nil), obs.lines...)
	obs.lines = nil
	obs.mu.Unlock()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("hooks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	calls := servers[0].Recording().Messages("tools/call")
	if len(calls) != 1 {
		t.Fatalf("%d tools/call received", len(calls))
	}
	var meta map[string]any
	_ = json.Unmarshal(calls[0].Params()["_meta"], &meta)
	if meta["traceparent"] != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" || meta["tracestate"] != "k=v" {
		t.Errorf("_meta %v: want the MCP request's trace context", meta)
	}

	if obs.reconnects.Load() != 0 {
		t.Fatalf("a reconnect before any connection was lost")
	}
	if _, err := s.CallTool(t.Context(), "db", "crash", json.RawMessage(`{}`)); err == nil {
		t.Fatal("the crashing call succeeded")
	}
	if _, err := s.CallTool(t.Context(), "db", "read", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("after the server died: %v", err)
	}
	if n := obs.reconnects.Load(); n != 1 {
		t.Errorf("%d reconnects told, want 1", n)
	}
}
