// Package model owns the seam between agenthost's agent loop and a language
// model: agenthost's own request, message and response types, and the LLM
// interface a model client implements. No third party's types cross it, so a
// chat backend can bring any model (or a recorded one in tests) and the
// default go-openai client (package openaimodel) can change without changing
// the library API.
package model

import (
	"context"
	"iter"

	"github.com/agenthost/agenthost/llmview"
)

// LLM is a language model the agent loop talks to.
//
// Generate sends one request and yields the answer as it streams in: zero or
// more partial responses (Partial true, Message.Content holding only the new
// piece of text), then exactly one final response (Partial false) holding
// the whole assistant message and the request's token usage. An error ends
// the sequence; a consumer that stops early cancels the request. A model that
// does not stream yields the final response alone.
type LLM interface {
	Generate(ctx context.Context, req *Request) iter.Seq2[*Response, error]
}

// Role is who wrote a message.
type Role string

// Roles of a conversation.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one message of a conversation. It is plain data, encodable as
// JSON, so a transcript can be persisted and restored (see host.History).
type Message struct {
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asks for.
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID is the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ToolCall is one function call the model asks for.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are the call's arguments as the model wrote them (JSON text
	// when the model behaves; the host checks it).
	Arguments string `json:"arguments"`
}

// Request is one model request.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the functions the model may call: the session's view.
	Tools []llmview.Function
}

// Response is one element of a generated answer (see LLM).
type Response struct {
	Message Message
	// Partial marks a streamed piece of text; the final response has it
	// false.
	Partial bool
	// FinishReason is the model's own reason for stopping (final response
	// only; empty when the model gives none).
	FinishReason string
	// Usage is the request's token usage (final response only).
	Usage Usage
}

// Usage counts model tokens.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	// CachedPromptTokens are the prompt tokens the provider read from its
	// prompt cache: a part of PromptTokens, not added to it.
	CachedPromptTokens int `json:"cachedPromptTokens,omitempty"`
}

// Add accumulates u into the receiver.
func (u *Usage) Add(o Usage) {
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.TotalTokens += o.TotalTokens
	u.CachedPromptTokens += o.CachedPromptTokens
}

// Func adapts a function that returns a whole message at once into an LLM
// that yields it as the final response (for scripted or non-streaming
// models).
type Func func(ctx context.Context, req *Request) (Message, Usage, error)

// Generate implements LLM.
func (f Func) Generate(ctx context.Context, req *Request) iter.Seq2[*Response, error] {
	return func(yield func(*Response, error) bool) {
		msg, usage, err := f(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		msg.Role = RoleAssistant
		yield(&Response{Message: msg, Usage: usage}, nil)
	}
}
