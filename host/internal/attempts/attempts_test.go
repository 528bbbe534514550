package attempts

import (
	"context"
	"fmt"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/observe"
)

// fakeObserver records the MCP requests it is told of; every other hook
// panics through the nil embedded interface.
type fakeObserver struct {
	observe.Observer
	tp, ts string
	starts []observe.MCPRequestInfo
	ends   []observe.MCPRequestEnd
}

func (f *fakeObserver) StartMCPRequest(ctx context.Context, r observe.MCPRequestInfo) (context.Context, func(observe.MCPRequestEnd)) {
	f.starts = append(f.starts, r)
	return ctx, func(e observe.MCPRequestEnd) { f.ends = append(f.ends, e) }
}

func (f *fakeObserver) TraceContext(context.Context) (string, string) { return f.tp, f.ts }

// TestStart: an attempt's span names the masked server and tool and the
// transport; its _meta carries the trace context beside base in a fresh
// map (base itself is untouched, and handed on as it is without a trace);
// the outcome reports a failure with the server's JSON-RPC code.
func TestStart(t *testing.T) {
	red := bindings.NewRedactor()
	red.Add("SECRET-SERVER-NAME")
	for _, tt := range []struct {
		name, tp, ts string
		err          error
		wantMeta     int
		wantCode     int
	}{
		{"no trace", "", "", nil, 1, 0},
		{"traceparent only", "00-abc-def-01", "", nil, 2, 0},
		{"both, failed", "00-abc-def-01", "k=v", fmt.Errorf("send: %w", &mcpconn.CallError{RPC: &mcpconn.RPCError{Code: -32001}}), 3, -32001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := &fakeObserver{tp: tt.tp, ts: tt.ts}
			o := &Observer{Obs: obs, Redactor: red, Transport: func(string) string { return "http" }}
			base := map[string]any{"k": "v"}
			_, meta, end := o.Start(context.Background(), "SECRET-SERVER-NAME", "get", mcpconn.Attempt{SessionID: "s1"}, base)
			end(nil, tt.err)
			if len(meta) != tt.wantMeta || meta["k"] != "v" || len(base) != 1 {
				t.Errorf("meta %v, base %v", meta, base)
			}
			if tt.tp != "" && meta["traceparent"] != tt.tp {
				t.Errorf("traceparent %v", meta["traceparent"])
			}
			s := obs.starts[0]
			if s.Server == "SECRET-SERVER-NAME" || s.Tool != "get" || s.Transport != "http" || s.SessionID != "s1" {
				t.Errorf("start %+v", s)
			}
			if e := obs.ends[0]; e.Failed != (tt.err != nil) || e.RPCCode != tt.wantCode {
				t.Errorf("end %+v", e)
			}
		})
	}
}
