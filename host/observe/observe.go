// Package observe defines the host's telemetry hooks (Observer,
// LifecycleObserver) and what they are told. Package host/otelobs
// implements them with OpenTelemetry; package host re-exports every name
// (host.Observer, host.ToolCallInfo, ...), the same types.
package observe

import (
	"context"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/internal/hosterr"
)

// Observer receives the host's telemetry hooks: a turn, each model
// request, each tool call, each MCP request a call makes, each approval
// decision and each credential resolution. Package host/otelobs implements
// it with OpenTelemetry (traces and metrics); a program that does not set
// Options.Observer neither pays for it nor links OpenTelemetry.
//
// The Start hooks return the context the observed operation runs under
// (carrying the observer's span, so nested operations become its
// children) and a function the host calls exactly once when the
// operation ends. Hooks run on the caller's goroutine and must return
// quickly.
//
// What the hooks are given is chosen so that nothing secret can leave
// through them: names, counts, outcomes and risk metadata; never secure
// values, session values, resolved credentials, binding refs, tool
// arguments or results, or model text.
type Observer interface {
	StartTurn(ctx context.Context, t TurnInfo) (context.Context, func(TurnEnd))
	StartModelRequest(ctx context.Context, r ModelRequestInfo) (context.Context, func(ModelRequestEnd))
	StartToolCall(ctx context.Context, c ToolCallInfo) (context.Context, func(ToolCallEnd))
	StartMCPRequest(ctx context.Context, r MCPRequestInfo) (context.Context, func(MCPRequestEnd))
	// Decision is told the approval decision of a call (under the tool
	// call's context).
	Decision(ctx context.Context, d DecisionInfo)
	// CredentialResolved is told about each credential resolution, once
	// it returned (under the tool call's context).
	CredentialResolved(ctx context.Context, e bindings.ResolveEvent)
	// TraceContext is the W3C trace context of ctx (traceparent and
	// tracestate header values; empty when there is none), which the host
	// propagates to MCP servers in params._meta and to the model endpoint
	// in headers.
	TraceContext(ctx context.Context) (traceparent, tracestate string)
}

// LifecycleObserver is an optional interface of an Observer: an Observer
// that implements it is also told about credential plugin restarts and MCP
// server reconnects (from background goroutines).
type LifecycleObserver interface {
	PluginRestarted(ctx context.Context, source string)
	ServerReconnected(ctx context.Context, server string)
}

// TurnInfo describes a turn as it starts.
type TurnInfo struct {
	SessionID string
	Model     string
	// TraceParent and TraceState are the W3C trace context the turn
	// continues (TurnOptions.TraceParent); empty starts a new trace unless
	// ctx carries one the observer knows.
	TraceParent, TraceState string
}

// TurnEnd is how a turn ended.
type TurnEnd struct {
	// Reason is the session_end reason (done, max_steps, error, interrupted).
	Reason string
	Steps  int
	// InputTokens and OutputTokens are the turn's token totals.
	InputTokens, OutputTokens int
	// Kind is the error kind when Reason is error.
	Kind hosterr.Kind
}

// ModelRequestInfo describes one model request as it starts.
type ModelRequestInfo struct {
	Model string
	// Step is the turn's step number (1-based).
	Step int
	// Tools is how many tools the model is offered.
	Tools int
}

// ModelRequestEnd is how a model request ended.
type ModelRequestEnd struct {
	InputTokens, OutputTokens int
	// FinishReason is the model's reason for stopping (empty when it gave
	// none).
	FinishReason string
	// ToolCalls is how many tool calls the answer asks for.
	ToolCalls int
	// Failed is set when the request failed (Cancelled when it failed
	// because the turn was cancelled).
	Failed, Cancelled bool
}

// ToolCallInfo describes one tool call as it starts.
type ToolCallInfo struct {
	SessionID   string
	CallID      string
	Server      string
	Tool        string
	ExposedName string
}

// ToolCallEnd is how a tool call ended.
type ToolCallEnd struct {
	// ErrorKind is the failure's kind; empty when the call returned a
	// result (IsError then says whether the tool reported an error).
	ErrorKind hosterr.Kind
	IsError   bool
}

// MCPRequestInfo describes one MCP request (one tools/call attempt) as it
// starts.
type MCPRequestInfo struct {
	Method          string
	Server          string
	Tool            string
	SessionID       string // the MCP session id, when the transport has one
	ProtocolVersion string
	// Transport is the configured transport: stdio, http or sse.
	Transport string
}

// MCPRequestEnd is how an MCP request ended.
type MCPRequestEnd struct {
	// RPCCode is the JSON-RPC error code of an error answer (0 otherwise).
	RPCCode int
	// Failed is set for any failure: an error answer, a lost connection,
	// a timeout.
	Failed bool
	// IsError is the tool result's isError.
	IsError bool
}

// DecisionInfo is one approval decision.
type DecisionInfo struct {
	Server, Tool string
	Result       approvals.Result
	// Wait is how long the decision took (approvers included).
	Wait time.Duration
}
