package modeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// completion is the assistant turn a step produces.
type completion struct {
	id      string
	model   string
	created int64
	text    string
	calls   []responseToolCall
	usage   usageOut
}

type responseMessage struct {
	Role      string             `json:"role"`
	Content   *string            `json:"content"`
	Refusal   *string            `json:"refusal"`
	ToolCalls []responseToolCall `json:"tool_calls,omitempty"`
}

type responseToolCall struct {
	Index    *int             `json:"index,omitempty"` // only in stream deltas
	ID       string           `json:"id,omitempty"`
	Type     string           `json:"type,omitempty"`
	Function responseFunction `json:"function"`
}

type responseFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usageOut struct {
	PromptTokens        int            `json:"prompt_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	PromptTokensDetails *promptDetails `json:"prompt_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

type choice struct {
	Index        int              `json:"index"`
	Message      *responseMessage `json:"message,omitempty"`
	Delta        *delta           `json:"delta,omitempty"`
	Logprobs     *struct{}        `json:"logprobs"`
	FinishReason *string          `json:"finish_reason"`
}

type delta struct {
	Role      string             `json:"role,omitempty"`
	Content   json.RawMessage    `json:"content,omitempty"`
	ToolCalls []responseToolCall `json:"tool_calls,omitempty"`
}

type envelope struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             any      `json:"usage,omitempty"`
	SystemFingerprint string   `json:"system_fingerprint"`
}

func newCompletion(x *exchange, step Step) completion {
	c := completion{
		id:      fmt.Sprintf("chatcmpl-fakellm-%d", x.index),
		model:   x.req.Model,
		created: time.Now().Unix(),
		text:    step.Text,
	}
	size := len(step.Text)
	for j, call := range step.ToolCalls {
		c.calls = append(c.calls, responseToolCall{
			ID:       call.callID(x.step, j),
			Type:     "function",
			Function: responseFunction{Name: call.Name, Arguments: call.Arguments},
		})
		size += len(call.Name) + len(call.Arguments)
	}
	if step.Usage != nil {
		c.usage = usageOut{PromptTokens: step.Usage.PromptTokens, CompletionTokens: step.Usage.CompletionTokens}
		if step.Usage.CachedTokens > 0 {
			c.usage.PromptTokensDetails = &promptDetails{CachedTokens: step.Usage.CachedTokens}
		}
	} else {
		// About four bytes a token, like OpenAI's rule of thumb.
		c.usage = usageOut{PromptTokens: max(1, len(x.body)/4), CompletionTokens: max(1, size/4)}
	}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	return c
}

func (c completion) finishReason() *string {
	reason := "stop"
	if len(c.calls) > 0 {
		reason = "tool_calls"
	}
	return &reason
}

func (c completion) envelope(object string, choices ...choice) envelope {
	if choices == nil {
		choices = []choice{} // the usage chunk has "choices": []
	}
	return envelope{ID: c.id, Object: object, Created: c.created, Model: c.model, Choices: choices, SystemFingerprint: "fp_fakellm"}
}

// answer plays step for a request that passed the gatekeeping in serveHTTP.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, x *exchange, step Step) {
	ctx := r.Context()
	if step.Delay > 0 && !s.wait(ctx, step.Delay) {
		s.abortIfClosed()
		return
	}
	if step.Status != 0 {
		writeError(w, step.Status, step.RetryAfter, stepErrorBody(step))
		return
	}
	c := newCompletion(x, step)
	if x.req.Stream {
		includeUsage := x.req.StreamOptions != nil && x.req.StreamOptions.IncludeUsage
		s.stream(ctx, w, c, includeUsage, step.Hang)
		return
	}
	if step.Hang {
		s.wait(ctx, -1)
		s.abortIfClosed()
		return
	}
	msg := &responseMessage{Role: "assistant", ToolCalls: c.calls}
	if c.text != "" || len(c.calls) == 0 {
		msg.Content = &c.text // OpenAI sends null content with tool calls and no text
	}
	resp := c.envelope("chat.completion", choice{Message: msg, FinishReason: c.finishReason()})
	resp.Usage = c.usage
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp) // a write error means the client left
}

// stream writes the completion as OpenAI's SSE chunks. With hang it stops
// before the finish chunk and waits for the client to go away.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, c completion, includeUsage, hang bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(ch choice, usage any) bool {
		chunk := c.envelope("chat.completion.chunk", ch)
		if ch.Delta == nil {
			chunk = c.envelope("chat.completion.chunk")
		}
		if includeUsage {
			chunk.Usage = json.RawMessage("null")
			if usage != nil {
				chunk.Usage = usage
			}
		}
		data, err := json.Marshal(chunk)
		if err != nil || ctx.Err() != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}

	first := &delta{Role: "assistant", Content: json.RawMessage(`""`)}
	if c.text == "" && len(c.calls) > 0 {
		first.Content = json.RawMessage("null")
	}
	if !send(choice{Delta: first}, nil) {
		return
	}
	for _, piece := range splitRunes(c.text, s.chunkRunes) {
		content, _ := json.Marshal(piece) // a string always marshals
		if !send(choice{Delta: &delta{Content: content}}, nil) {
			return
		}
	}
	for i, call := range c.calls {
		head := call
		head.Index, head.Function.Arguments = &i, ""
		if !send(choice{Delta: &delta{ToolCalls: []responseToolCall{head}}}, nil) {
			return
		}
		for _, piece := range splitRunes(call.Function.Arguments, s.chunkRunes) {
			part := responseToolCall{Index: &i, Function: responseFunction{Arguments: piece}}
			if !send(choice{Delta: &delta{ToolCalls: []responseToolCall{part}}}, nil) {
				return
			}
		}
	}
	if hang {
		s.wait(ctx, -1)
		s.abortIfClosed()
		return
	}
	if !send(choice{Delta: &delta{}, FinishReason: c.finishReason()}, nil) {
		return
	}
	if includeUsage && !send(choice{}, c.usage) {
		return
	}
	if _, err := fmt.Fprint(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
}

// splitRunes cuts s into pieces of at most n runes.
func splitRunes(s string, n int) []string {
	var pieces []string
	for s != "" {
		end, count := 0, 0
		for end < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
			count++
		}
		pieces = append(pieces, s[:end])
		s = s[end:]
	}
	return pieces
}

// wait blocks for d (forever when d < 0) and reports whether it ran out,
// rather than the client leaving or the server closing.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	var expired <-chan time.Time
	if d >= 0 {
		timer := time.NewTimer(d)
		defer timer.Stop()
		expired = timer.C
	}
	select {
	case <-expired:
		return true
	case <-ctx.Done():
	case <-s.stopped:
	}
	return false
}

// abortIfClosed drops the connection when the server was closed, so a
// client waiting on a hang sees the server go away rather than an empty 200.
func (s *Server) abortIfClosed() {
	select {
	case <-s.stopped:
		panic(http.ErrAbortHandler)
	default:
	}
}

// stepErrorBody is the body of an error step: Body verbatim when it is JSON,
// otherwise an OpenAI error object with Body (or a default) as message.
func stepErrorBody(step Step) []byte {
	if step.Body != "" && json.Valid([]byte(step.Body)) {
		return []byte(step.Body)
	}
	return errorBody(step.Status, step.Body)
}

// errorBody is an OpenAI-style error object for status.
func errorBody(status int, message string) []byte {
	errType, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status == http.StatusNotFound:
		code = "unknown_url"
	case status == http.StatusTooManyRequests:
		errType, code = "requests", "rate_limit_exceeded"
	case status >= 500:
		errType = "server_error"
	}
	if message == "" {
		message = fmt.Sprintf("fakellm scripted error: %d %s", status, http.StatusText(status))
	}
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    any     `json:"code"`
	}
	body, _ := json.Marshal(map[string]apiError{"error": {Message: message, Type: errType, Code: code}}) // plain strings always marshal
	return body
}

func writeError(w http.ResponseWriter, status int, retryAfter string, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_, _ = w.Write(body) // a write error means the client left
}
