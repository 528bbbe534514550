package modeltest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func newClient(baseURL, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = baseURL
	return openai.NewClientWithConfig(cfg)
}

func userRequest(text string) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: text}},
	}
}

// streamed is what a go-openai stream delivered, reassembled the way a host
// has to reassemble it.
type streamed struct {
	message       openai.ChatCompletionMessage
	finish        openai.FinishReason
	usage         *openai.Usage
	firstRole     string
	contentDeltas int
	argDeltas     map[int]int // tool call index -> deltas carrying arguments
}

func readStream(t *testing.T, stream *openai.ChatCompletionStream) streamed {
	t.Helper()
	defer stream.Close()
	got := streamed{argDeltas: map[int]int{}}
	var content strings.Builder
	for n := 0; ; n++ {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("stream.Recv: %v", err)
		}
		if chunk.Usage != nil {
			got.usage = chunk.Usage
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		c := chunk.Choices[0]
		if n == 0 {
			got.firstRole = c.Delta.Role
		}
		if c.Delta.Content != "" {
			got.contentDeltas++
			content.WriteString(c.Delta.Content)
		}
		for _, d := range c.Delta.ToolCalls {
			if d.Index == nil {
				t.Fatalf("tool call delta without index: %+v", d)
			}
			i := *d.Index
			for len(got.message.ToolCalls) <= i {
				got.message.ToolCalls = append(got.message.ToolCalls, openai.ToolCall{})
			}
			tc := &got.message.ToolCalls[i]
			if d.ID != "" {
				tc.ID, tc.Type, tc.Function.Name = d.ID, d.Type, d.Function.Name
			}
			if d.Function.Arguments != "" {
				got.argDeltas[i]++
				tc.Function.Arguments += d.Function.Arguments
			}
		}
		if c.FinishReason != "" {
			got.finish = c.FinishReason
		}
	}
	got.message.Role = got.firstRole
	got.message.Content = content.String()
	return got
}

// trackedHandler reports when each request's handler has returned.
func trackedHandler(h http.Handler) (http.Handler, <-chan struct{}) {
	done := make(chan struct{}, 16)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { done <- struct{}{} }()
		h.ServeHTTP(w, r)
	}), done
}

func post(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func openaiToolMessage(id, content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: content}
}
