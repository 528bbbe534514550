package modeltest

import (
	"fmt"
	"slices"
	"strings"
)

var knownRoles = []string{"system", "developer", "user", "assistant", "tool"}

// checkWire returns what OpenAI would reject in a parsed request.
func checkWire(req chatRequest) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if req.Model == "" {
		fail("no model")
	}
	if len(req.Messages) == 0 {
		fail("no messages")
	}
	if req.StreamOptions != nil && !req.Stream {
		fail("stream_options without stream")
	}

	// OpenAI's rule: an assistant message with tool_calls must be followed
	// directly by one tool message per call, and every tool message must
	// answer such a call.
	var pending []string      // unanswered calls of the latest assistant message
	pendingFrom := -1         // that message's index
	seen := map[string]bool{} // every tool call id so far
	answered := map[string]bool{}
	for i, m := range req.Messages {
		if !slices.Contains(knownRoles, m.Role) {
			fail("messages[%d]: unknown role %q", i, m.Role)
		}
		if m.Role == "tool" {
			id := m.ToolCallID
			switch {
			case id == "":
				fail("messages[%d]: tool message without tool_call_id", i)
			case slices.Contains(pending, id):
				pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
				answered[id] = true
			case answered[id]:
				fail("messages[%d]: tool_call_id %q is answered more than once", i, id)
			case seen[id]:
				fail("messages[%d]: tool_call_id %q answers a call of an earlier turn, not the preceding assistant message", i, id)
			default:
				fail("messages[%d]: tool_call_id %q matches no tool call of a previous assistant message", i, id)
			}
			continue
		}
		if len(pending) > 0 {
			fail("messages[%d]: tool calls %s of messages[%d] are not answered before it", i, strings.Join(pending, ", "), pendingFrom)
			pending = nil
		}
		if m.Role != "assistant" {
			continue
		}
		for j, call := range m.ToolCalls {
			switch {
			case call.ID == "":
				fail("messages[%d].tool_calls[%d]: no id", i, j)
				continue
			case seen[call.ID]:
				fail("messages[%d].tool_calls[%d]: id %q is used twice", i, j, call.ID)
			}
			if call.Type != "function" {
				fail("messages[%d].tool_calls[%d]: type %q, want \"function\"", i, j, call.Type)
			}
			if call.Function.Name == "" {
				fail("messages[%d].tool_calls[%d]: no function name", i, j)
			}
			seen[call.ID] = true
			pending = append(pending, call.ID)
			pendingFrom = i
		}
	}
	if len(pending) > 0 {
		fail("tool calls %s of messages[%d] are not answered", strings.Join(pending, ", "), pendingFrom)
	}
	return problems
}

// checkExpect returns the failed expectations of a step, each naming itself.
func checkExpect(e *Expect, req chatRequest, body []byte) []string {
	if e == nil {
		return nil
	}
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if want := e.LastToolResultContains; want != "" {
		if last, ok := lastWithRole(req.Messages, "tool"); !ok {
			fail("expect.lastToolResultContains %q: the request has no tool message", want)
		} else if !strings.Contains(last.Text(), want) {
			fail("expect.lastToolResultContains %q: the last tool message does not contain it", want)
		}
	}
	if want := e.LastUserContains; want != "" {
		if last, ok := lastWithRole(req.Messages, "user"); !ok {
			fail("expect.lastUserContains %q: the request has no user message", want)
		} else if !strings.Contains(last.Text(), want) {
			fail("expect.lastUserContains %q: the last user message does not contain it", want)
		}
	}
	names := toolNames(req.Tools)
	for _, name := range e.ToolsInclude {
		if !slices.Contains(names, name) {
			fail("expect.toolsInclude %q: not among the request's tools", name)
		}
	}
	for _, name := range e.ToolsExclude {
		if slices.Contains(names, name) {
			fail("expect.toolsExclude %q: offered in the request's tools", name)
		}
	}
	if len(e.BodyExcludes) > 0 {
		text := Recording{{Body: body}}.AllText()
		for i, canary := range e.BodyExcludes {
			if canary != "" && strings.Contains(text, canary) {
				fail("expect.bodyExcludes[%d]: found in the request body", i)
			}
		}
	}
	return problems
}

func lastWithRole(msgs []Message, role string) (Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return msgs[i], true
		}
	}
	return Message{}, false
}
