package host

import (
	"context"

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

// reconnectHook tells the observer about a server's reconnects (nil
// without one).
func reconnectHook(o LifecycleObserver, server string) func() {
	if o == nil {
		return nil
	}
	return func() { o.ServerReconnected(context.Background(), server) }
}
