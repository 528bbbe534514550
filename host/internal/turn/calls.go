package turn

import (
	"encoding/json"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/llmview"
)

// CallArgs is a model call's arguments as they are sent: trimmed, and
// "{}" when there are none.
func CallArgs(raw string) json.RawMessage {
	args := json.RawMessage(strings.TrimSpace(raw))
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// CallEvent is the tool_call event of a call (base names it) with args:
// as they are when they are JSON (valid: the call's one check of them,
// rules.CheckArgs, found them so), else quoted as one string.
func CallEvent(base event.Event, args json.RawMessage, valid bool) event.Event {
	e := base
	e.Type = event.ToolCall
	if valid {
		e.Arguments = args
	} else {
		quoted, _ := json.Marshal(string(args))
		e.Arguments = quoted
	}
	return e
}

// ResultEvent is the tool_result event of a call (base names it).
func ResultEvent(base event.Event, content []mcp.Content, isErr bool, labels []string) event.Event {
	e := base
	e.Type = event.ToolResult
	e.IsError = &isErr
	e.Content = content
	e.Labels = labels
	return e
}

// Offered sets session_start's tools (e) to those view offers the model,
// and returns how many of them each server has.
func Offered(e *event.Event, view *llmview.View) map[string]int {
	perServer := map[string]int{}
	if n := view.Len(); n > 0 {
		e.Tools = make([]string, 0, n)
	}
	for f, ref := range view.All() {
		e.Tools = append(e.Tools, f.Name)
		perServer[ref.Server]++
	}
	return perServer
}
