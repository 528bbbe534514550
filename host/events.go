package host

import (
	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/model"
)

// EventType names an agent-loop event. The values are the "type" of
// `run --output-format stream-json` lines (docs/events.md).
type EventType = event.Type

// Event types (package event says what each is).
const (
	EventSessionStart      = event.SessionStart
	EventAssistantDelta    = event.AssistantDelta // a piece of streamed assistant text
	EventAssistant         = event.Assistant      // a complete assistant text
	EventToolCall          = event.ToolCall
	EventApproval          = event.Approval
	EventApprovalRequested = event.ApprovalRequested
	EventToolProgress      = event.ToolProgress
	EventToolResult        = event.ToolResult
	EventToolTask          = event.ToolTask
	EventError             = event.Error
	EventSessionEnd        = event.SessionEnd
	EventAuthorization     = event.Authorization
)

// End reasons of a turn.
const (
	EndDone        = "done"
	EndMaxSteps    = "max_steps"
	EndError       = "error"
	EndInterrupted = "interrupted"
)

// Event is one thing that happened in a turn (package event). Only the
// fields of its Type are set. Nothing in an Event ever carries a secure
// value.
type Event = event.Event

// EventServer is one configured server in a session_start event.
type EventServer = event.Server

// Usage counts model tokens over a turn.
type Usage = model.Usage
