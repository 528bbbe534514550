package host

import (
	"context"
	"errors"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/observe"
)

// The host's telemetry hooks and what they are told (package observe says
// what each is): Options.Observer receives them; one that also implements
// LifecycleObserver hears of plugin restarts and server reconnects.
type (
	Observer          = observe.Observer
	LifecycleObserver = observe.LifecycleObserver
	TurnInfo          = observe.TurnInfo
	TurnEnd           = observe.TurnEnd
	ModelRequestInfo  = observe.ModelRequestInfo
	ModelRequestEnd   = observe.ModelRequestEnd
	ToolCallInfo      = observe.ToolCallInfo
	ToolCallEnd       = observe.ToolCallEnd
	MCPRequestInfo    = observe.MCPRequestInfo
	MCPRequestEnd     = observe.MCPRequestEnd
	DecisionInfo      = observe.DecisionInfo
)

// startAttempt tells the observer one tools/call attempt starts (an MCP
// request to it), and returns the context to send the attempt under, the
// attempt's _meta (its trace context, traceparent and tracestate, as the
// MCP conventions propagate it on every transport, beside base; a fresh
// map each attempt) and the function to call with the attempt's outcome.
func (h *Host) startAttempt(ctx context.Context, obs Observer, server, tool string, a mcpconn.Attempt, base map[string]any) (context.Context, map[string]any, func(*mcp.CallToolResult, error)) {
	transport := ""
	if sc := h.cfg.MCPServers[server]; sc != nil {
		transport = string(sc.Type)
	}
	ctx, end := obs.StartMCPRequest(ctx, MCPRequestInfo{
		Method: string(mcp.MethodToolsCall), Server: h.redactor.Redact(server), Tool: h.redactor.Redact(tool),
		SessionID: a.SessionID, ProtocolVersion: a.ProtocolVersion, Transport: transport,
	})
	meta := base
	if tp, ts := obs.TraceContext(ctx); tp != "" {
		meta = make(map[string]any, len(base)+2)
		meta["traceparent"] = tp
		if ts != "" {
			meta["tracestate"] = ts
		}
		maps.Copy(meta, base)
	}
	return ctx, meta, func(result *mcp.CallToolResult, err error) {
		e := MCPRequestEnd{Failed: err != nil, IsError: err == nil && result != nil && result.IsError}
		var ce *mcpconn.CallError
		if errors.As(err, &ce) && ce.RPC != nil {
			e.RPCCode = ce.RPC.Code
		}
		end(e)
	}
}

// reconnectHook tells the observer about a server's reconnects (nil
// without one).
func reconnectHook(o LifecycleObserver, server string) func() {
	if o == nil {
		return nil
	}
	return func() { o.ServerReconnected(context.Background(), server) }
}
