package modeltest

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
)

func TestCompletionsThroughGoOpenAI(t *testing.T) {
	malformed := `{"city": "Par` // cut off mid-string, as a model sometimes does
	tests := []struct {
		name      string
		step      Step
		wantMsg   openai.ChatCompletionMessage
		wantUsage *Usage // nil: estimated, only checked to be positive
	}{
		{
			name:    "text",
			step:    Step{Text: "Hello there, how can I help?"},
			wantMsg: openai.ChatCompletionMessage{Role: "assistant", Content: "Hello there, how can I help?"},
		},
		{
			name: "parallel tool calls with text",
			step: Step{Text: "Checking both.", ToolCalls: []ToolCall{
				{Name: "weather__get", Arguments: `{"city":"Paris","unit":"C"}`, ID: "call_a"},
				{Name: "orders__list", Arguments: `{"limit":10}`},
			}},
			wantMsg: openai.ChatCompletionMessage{Role: "assistant", Content: "Checking both.", ToolCalls: []openai.ToolCall{
				{ID: "call_a", Type: "function", Function: openai.FunctionCall{Name: "weather__get", Arguments: `{"city":"Paris","unit":"C"}`}},
				{ID: "call_0_1", Type: "function", Function: openai.FunctionCall{Name: "orders__list", Arguments: `{"limit":10}`}},
			}},
		},
		{
			name: "malformed arguments pass through verbatim",
			step: Step{ToolCalls: []ToolCall{{Name: "weather__get", Arguments: malformed, ID: "call_m"}}},
			wantMsg: openai.ChatCompletionMessage{Role: "assistant", ToolCalls: []openai.ToolCall{
				{ID: "call_m", Type: "function", Function: openai.FunctionCall{Name: "weather__get", Arguments: malformed}},
			}},
		},
		{
			name:      "scripted usage",
			step:      Step{Text: "ok", Usage: &Usage{PromptTokens: 123, CompletionTokens: 45}},
			wantMsg:   openai.ChatCompletionMessage{Role: "assistant", Content: "ok"},
			wantUsage: &Usage{PromptTokens: 123, CompletionTokens: 45},
		},
	}
	for _, tt := range tests {
		wantFinish := openai.FinishReasonStop
		if len(tt.wantMsg.ToolCalls) > 0 {
			wantFinish = openai.FinishReasonToolCalls
		}
		checkUsage := func(t *testing.T, u openai.Usage) {
			t.Helper()
			if tt.wantUsage != nil {
				if u.PromptTokens != tt.wantUsage.PromptTokens || u.CompletionTokens != tt.wantUsage.CompletionTokens {
					t.Errorf("usage = %+v, want %+v", u, *tt.wantUsage)
				}
			} else if u.PromptTokens <= 0 || u.CompletionTokens <= 0 {
				t.Errorf("estimated usage = %+v, want positive counts", u)
			}
			if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("total_tokens = %d, want %d", u.TotalTokens, u.PromptTokens+u.CompletionTokens)
			}
		}

		t.Run(tt.name+"/plain", func(t *testing.T) {
			srv := New(Script{tt.step})
			client := newClient(srv.Start(t), "k")
			resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
			if err != nil {
				t.Fatalf("CreateChatCompletion: %v", err)
			}
			if len(resp.Choices) != 1 {
				t.Fatalf("choices = %d, want 1", len(resp.Choices))
			}
			if diff := cmp.Diff(tt.wantMsg, resp.Choices[0].Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if resp.Choices[0].FinishReason != wantFinish {
				t.Errorf("finish_reason = %q, want %q", resp.Choices[0].FinishReason, wantFinish)
			}
			if resp.Object != "chat.completion" || resp.Model != "gpt-test" || resp.ID == "" {
				t.Errorf("envelope = object %q model %q id %q", resp.Object, resp.Model, resp.ID)
			}
			checkUsage(t, resp.Usage)
			srv.AssertNoFailures(t)
		})

		t.Run(tt.name+"/stream", func(t *testing.T) {
			srv := New(Script{tt.step}, WithChunkRunes(3))
			client := newClient(srv.Start(t), "k")
			req := userRequest("hi")
			req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
			stream, err := client.CreateChatCompletionStream(context.Background(), req)
			if err != nil {
				t.Fatalf("CreateChatCompletionStream: %v", err)
			}
			got := readStream(t, stream)
			if got.firstRole != "assistant" {
				t.Errorf("first delta role = %q, want assistant", got.firstRole)
			}
			if diff := cmp.Diff(tt.wantMsg, got.message); diff != "" {
				t.Errorf("reassembled message (-want +got):\n%s", diff)
			}
			if got.finish != wantFinish {
				t.Errorf("finish_reason = %q, want %q", got.finish, wantFinish)
			}
			if len(tt.wantMsg.Content) > 3 && got.contentDeltas < 2 {
				t.Errorf("content came in %d deltas, want several", got.contentDeltas)
			}
			for i, call := range tt.wantMsg.ToolCalls {
				if len(call.Function.Arguments) > 3 && got.argDeltas[i] < 2 {
					t.Errorf("tool call %d arguments came in %d deltas, want several", i, got.argDeltas[i])
				}
			}
			if got.usage == nil {
				t.Fatal("no usage chunk although stream_options.include_usage is set")
			}
			checkUsage(t, *got.usage)
			srv.AssertNoFailures(t)
		})
	}
}

func TestStreamWithoutIncludeUsageSendsNoUsage(t *testing.T) {
	srv := New(Script{{Text: "hello"}})
	stream, err := newClient(srv.Start(t), "k").CreateChatCompletionStream(context.Background(), userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	got := readStream(t, stream)
	if got.usage != nil {
		t.Errorf("usage = %+v, want none", *got.usage)
	}
	if got.message.Content != "hello" {
		t.Errorf("content = %q", got.message.Content)
	}
}

func TestErrorSteps(t *testing.T) {
	tests := []struct {
		name        string
		step        Step
		wantStatus  int
		wantType    string
		wantCode    any
		wantMessage string // "" to skip
	}{
		{"429 with retry-after", Step{Status: 429, RetryAfter: "1", Body: "slow down"}, 429, "requests", "rate_limit_exceeded", "slow down"},
		// OpenAI sends "code": null for server errors; go-openai decodes that as 0.
		{"500 default message", Step{Status: 500}, 500, "server_error", 0, "fakellm scripted error: 500 Internal Server Error"},
		{"503", Step{Status: 503}, 503, "server_error", 0, ""},
		{"verbatim JSON body", Step{Status: 400, Body: `{"error":{"message":"context too long","type":"invalid_request_error","code":"context_length_exceeded"}}`},
			400, "invalid_request_error", "context_length_exceeded", "context too long"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/plain", true: "/stream"}[stream]
			t.Run(name, func(t *testing.T) {
				srv := New(Script{tt.step, {Text: "after"}})
				var seen http.Header
				cfg := openai.DefaultConfig("k")
				cfg.BaseURL = srv.Start(t)
				cfg.HTTPClient = &http.Client{Transport: headerSpy{&seen}}
				client := openai.NewClientWithConfig(cfg)
				var err error
				if stream {
					var s *openai.ChatCompletionStream
					s, err = client.CreateChatCompletionStream(context.Background(), userRequest("hi"))
					if err == nil {
						s.Close()
					}
				} else {
					_, err = client.CreateChatCompletion(context.Background(), userRequest("hi"))
				}
				var apiErr *openai.APIError
				if !errors.As(err, &apiErr) {
					t.Fatalf("error = %v (%T), want *openai.APIError", err, err)
				}
				if apiErr.HTTPStatusCode != tt.wantStatus || apiErr.Type != tt.wantType || apiErr.Code != tt.wantCode {
					t.Errorf("APIError = status %d type %q code %v, want %d %q %v", apiErr.HTTPStatusCode, apiErr.Type, apiErr.Code, tt.wantStatus, tt.wantType, tt.wantCode)
				}
				if tt.wantMessage != "" && apiErr.Message != tt.wantMessage {
					t.Errorf("message = %q, want %q", apiErr.Message, tt.wantMessage)
				}
				if got := seen.Get("Retry-After"); got != tt.step.RetryAfter {
					t.Errorf("Retry-After = %q, want %q", got, tt.step.RetryAfter)
				}
				// The error consumed its step: a retry gets the next one.
				resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
				if err != nil || resp.Choices[0].Message.Content != "after" {
					t.Errorf("retry = %+v, %v; want the next step's text", resp, err)
				}
				srv.AssertNoFailures(t)
			})
		}
	}
}

// headerSpy keeps the response headers of the last request.
type headerSpy struct{ last *http.Header }

func (s headerSpy) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		*s.last = resp.Header
	}
	return resp, err
}
