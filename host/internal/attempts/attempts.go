// Package attempts owns the observation of a call's tools/call attempts:
// the MCP request span the observer opens for each attempt, the trace
// context propagated in the attempt's _meta, and the attempt's outcome as
// the observer is told it.
package attempts

import (
	"context"
	"errors"
	"maps"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/host/observe"
)

// Observer tells an observer about each tools/call attempt.
type Observer struct {
	Obs observe.Observer
	// Redactor masks protected values in the server and tool names.
	Redactor *bindings.Redactor
	// Transport is the configured transport of a server ("" unknown).
	Transport func(server string) string
}

// Start tells the observer one tools/call attempt starts (an MCP request
// to it), and returns the context to send the attempt under, the attempt's
// _meta (its trace context, traceparent and tracestate, as the MCP
// conventions propagate it on every transport, beside base; a fresh map
// each attempt) and the function to call with the attempt's outcome.
func (o *Observer) Start(ctx context.Context, server, tool string, a mcpconn.Attempt, base map[string]any) (context.Context, map[string]any, func(*mcp.CallToolResult, error)) {
	ctx, end := o.Obs.StartMCPRequest(ctx, observe.MCPRequestInfo{
		Method: string(mcp.MethodToolsCall), Server: o.Redactor.Redact(server), Tool: o.Redactor.Redact(tool),
		SessionID: a.SessionID, ProtocolVersion: a.ProtocolVersion, Transport: o.Transport(server),
	})
	meta := base
	if tp, ts := o.Obs.TraceContext(ctx); tp != "" {
		meta = make(map[string]any, len(base)+2)
		meta["traceparent"] = tp
		if ts != "" {
			meta["tracestate"] = ts
		}
		maps.Copy(meta, base)
	}
	return ctx, meta, func(result *mcp.CallToolResult, err error) {
		e := observe.MCPRequestEnd{Failed: err != nil, IsError: err == nil && result != nil && result.IsError}
		var ce *mcpconn.CallError
		if errors.As(err, &ce) && ce.RPC != nil {
			e.RPCCode = ce.RPC.Code
		}
		end(e)
	}
}
