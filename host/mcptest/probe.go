package mcptest

import (
	"context"
	"encoding/json"

	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// probeReply runs the tool's probe.
func probeReply(ctx context.Context, b Behaviour, raw map[string]json.RawMessage, before []wire.Notification) reply {
	args := map[string]any{}
	for k, v := range raw {
		var x any
		if json.Unmarshal(v, &x) == nil {
			args[k] = x
		}
	}
	text, isError := toolset.RunProbe(ctx, b.Probe, args)
	result := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if isError {
		result["isError"] = true
	}
	return reply{result: result, before: before}
}
