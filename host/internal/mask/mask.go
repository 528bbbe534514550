// Package mask owns the masking of protected values in what a turn hands
// out: its events (Event) and the model's messages as the conversation
// keeps them (Message).
package mask

import (
	"slices"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/host/event"
	"github.com/agenthost/agenthost/host/model"
)

// Event masks protected values in every string of an event that a
// user or library caller sees. Streamed text is redacted by the turn's
// stream redactor and tool results by the call (results.Redact), so their
// text is not scanned again here.
func Event(r *bindings.Redactor, e *event.Event) {
	if r.Len() == 0 {
		return
	}
	if e.Type != event.AssistantDelta {
		e.Text = r.Redact(e.Text)
	}
	e.ExposedName = r.Redact(e.ExposedName)
	e.Server = r.Redact(e.Server)
	e.Tool = r.Redact(e.Tool)
	e.Error = r.Redact(e.Error)
	e.Explanation = r.Redact(e.Explanation)
	e.Result = r.Redact(e.Result)
	e.TaskID = r.Redact(e.TaskID)
	e.StatusMessage = r.Redact(e.StatusMessage)
	for i, name := range e.Tools {
		e.Tools[i] = r.Redact(name)
	}
	if len(e.Arguments) > 0 {
		e.Arguments = r.RedactJSON(e.Arguments)
	}
}

// Message returns the model's message with protected values masked
// in its text and tool calls; msg itself is not modified.
func Message(r *bindings.Redactor, msg model.Message) model.Message {
	if r.Len() == 0 {
		return msg
	}
	msg.Content = r.Redact(msg.Content)
	cloned := false
	for i, tc := range msg.ToolCalls {
		name, args := r.Redact(tc.Name), r.Redact(tc.Arguments)
		if name == tc.Name && args == tc.Arguments {
			continue
		}
		if !cloned {
			msg.ToolCalls = slices.Clone(msg.ToolCalls)
			cloned = true
		}
		msg.ToolCalls[i].Name, msg.ToolCalls[i].Arguments = name, args
	}
	return msg
}
