package serve

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host"
)

// fixtureObserver, when set, is the fixture host's Observer.
var fixtureObserver host.Observer

// turnRecorder records the trace context each turn is given.
type turnRecorder struct {
	mu     sync.Mutex
	parent []string
}

func (o *turnRecorder) StartTurn(ctx context.Context, t host.TurnInfo) (context.Context, func(host.TurnEnd)) {
	o.mu.Lock()
	o.parent = append(o.parent, t.TraceParent+"|"+t.TraceState)
	o.mu.Unlock()
	return ctx, func(host.TurnEnd) {}
}

func (o *turnRecorder) StartModelRequest(ctx context.Context, _ host.ModelRequestInfo) (context.Context, func(host.ModelRequestEnd)) {
	return ctx, func(host.ModelRequestEnd) {}
}

func (o *turnRecorder) StartToolCall(ctx context.Context, _ host.ToolCallInfo) (context.Context, func(host.ToolCallEnd)) {
	return ctx, func(host.ToolCallEnd) {}
}

func (o *turnRecorder) StartMCPRequest(ctx context.Context, _ host.MCPRequestInfo) (context.Context, func(host.MCPRequestEnd)) {
	return ctx, func(host.MCPRequestEnd) {}
}

func (o *turnRecorder) Decision(context.Context, host.DecisionInfo)                   {}
func (o *turnRecorder) CredentialResolved(context.Context, bindings.ResolveEvent)     {}
func (o *turnRecorder) TraceContext(context.Context) (traceparent, tracestate string) { return "", "" }

// TestTurnContinuesTheRequestsTraceContext: a turn started with a
// traceparent (and tracestate) header is given that trace context.
func TestTurnContinuesTheRequestsTraceContext(t *testing.T) {
	rec := &turnRecorder{}
	fixtureObserver = rec
	t.Cleanup(func() { fixtureObserver = nil })
	f := newFixture(t, nil)
	s := f.createSession(nil)
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/sessions/"+s.ID+"/turns", strings.NewReader(`{"message":"hello"}`))
	req.Header.Set("Authorization", "Bearer "+apiToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", tp)
	req.Header.Set("tracestate", "vendor=1")
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the stream ends with the turn
	resp.Body.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.parent) != 1 || rec.parent[0] != tp+"|vendor=1" {
		t.Fatalf("turns given %q, want the request's trace context", rec.parent)
	}
}
