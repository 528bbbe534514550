package modeltest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestStreamWireFormat reads the SSE bytes directly, since go-openai
// tolerates framing mistakes a stricter client would not.
func TestStreamWireFormat(t *testing.T) {
	srv := New(Script{{ToolCalls: []ToolCall{
		{Name: "a__first", Arguments: `{"q":"one"}`, ID: "call_x"},
		{Name: "b__second", Arguments: `{"q":"two"}`, ID: "call_y"},
	}}}, WithChunkRunes(5))
	resp := post(t, context.Background(), srv.Start(t)+"/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}

	type toolDelta struct {
		Index    *int    `json:"index"`
		ID       *string `json:"id"`
		Type     *string `json:"type"`
		Function struct {
			Name      *string `json:"name"`
			Arguments *string `json:"arguments"`
		} `json:"function"`
	}
	type chunk struct {
		Object  string `json:"object"`
		Choices []struct {
			Delta struct {
				Role      string      `json:"role"`
				Content   *string     `json:"content"`
				ToolCalls []toolDelta `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}

	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			t.Fatalf("event line %q does not start with \"data: \"", line)
		}
		events = append(events, strings.TrimPrefix(line, "data: "))
		if !sc.Scan() || sc.Text() != "" {
			t.Fatalf("event %q is not followed by a blank line", line)
		}
	}
	if len(events) == 0 || events[len(events)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", events)
	}
	var chunks []chunk
	for _, e := range events[:len(events)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(e), &c); err != nil {
			t.Fatalf("chunk %q: %v", e, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object = %q", c.Object)
		}
		chunks = append(chunks, c)
	}

	first := chunks[0].Choices[0].Delta
	if first.Role != "assistant" || first.Content != nil {
		t.Errorf("first delta = role %q content %v, want assistant with null content", first.Role, first.Content)
	}
	args := map[int]string{}
	heads := map[int]string{}
	for _, c := range chunks[1 : len(chunks)-2] {
		if len(c.Choices) != 1 || c.Choices[0].FinishReason != nil {
			t.Fatalf("middle chunk %+v has a finish_reason or no choice", c)
		}
		for _, d := range c.Choices[0].Delta.ToolCalls {
			if d.Index == nil || d.Function.Arguments == nil {
				t.Fatalf("tool delta %+v lacks index or arguments", d)
			}
			if d.ID != nil {
				if *d.Type != "function" || d.Function.Name == nil || *d.Function.Arguments != "" {
					t.Errorf("first delta of call %d = %+v, want type, name and empty arguments", *d.Index, d)
				}
				heads[*d.Index] = *d.ID + " " + *d.Function.Name
			} else if d.Type != nil || d.Function.Name != nil {
				t.Errorf("argument delta of call %d repeats type or name", *d.Index)
			}
			args[*d.Index] += *d.Function.Arguments
		}
	}
	if heads[0] != "call_x a__first" || heads[1] != "call_y b__second" {
		t.Errorf("tool call heads = %v", heads)
	}
	if args[0] != `{"q":"one"}` || args[1] != `{"q":"two"}` {
		t.Errorf("reassembled arguments = %v", args)
	}
	final := chunks[len(chunks)-2]
	if final.Choices[0].FinishReason == nil || *final.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("final chunk finish_reason = %v, want tool_calls", final.Choices[0].FinishReason)
	}
	usage := chunks[len(chunks)-1]
	if len(usage.Choices) != 0 || usage.Usage == nil || usage.Usage.TotalTokens == 0 {
		t.Errorf("usage chunk = %+v, want no choices and a usage", usage)
	}
}

func TestSplitRunesKeepsRunesWhole(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abc", 4, []string{"abc"}},
		{"abcdefghi", 4, []string{"abcd", "efgh", "i"}},
		{"héllo wörld", 3, []string{"hél", "lo ", "wör", "ld"}},
		{"日本語", 1, []string{"日", "本", "語"}},
	}
	for _, tt := range tests {
		got := splitRunes(tt.in, tt.n)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitRunes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

// waitRecorded waits until the server has recorded n requests, which
// happens before any delay or hang starts.
func waitRecorded(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(srv.Recorded()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("server recorded %d requests, want %d", len(srv.Recorded()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitHandlerDone(t *testing.T, done <-chan struct{}, why string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("handler still running after %s", why)
	}
}

func TestClientCancellationEndsWaitingHandler(t *testing.T) {
	tests := []struct {
		name   string
		step   Step
		stream bool
	}{
		{"delay", Step{Delay: time.Hour, Text: "late"}, false},
		{"delay stream", Step{Delay: time.Hour, Text: "late"}, true},
		{"hang", Step{Hang: true}, false},
		{"hang stream", Step{Hang: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Script{tt.step})
			h, done := trackedHandler(srv.Handler())
			ts := newTestServer(t, h)
			client := newClient(ts+"/v1", "k")
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				var err error
				if tt.stream {
					var s *openai.ChatCompletionStream
					if s, err = client.CreateChatCompletionStream(ctx, userRequest("hi")); err == nil {
						_, err = s.Recv()
						for err == nil {
							_, err = s.Recv()
						}
						s.Close()
					}
				} else {
					_, err = client.CreateChatCompletion(ctx, userRequest("hi"))
				}
				errc <- err
			}()
			waitRecorded(t, srv, 1)
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("client error = %v, want context.Canceled", err)
			}
			waitHandlerDone(t, done, "the client cancelled")
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	srv := New(Script{{Text: "partial answer", ToolCalls: []ToolCall{{Name: "x__y", Arguments: `{"a":1}`}}, Hang: true}})
	h, done := trackedHandler(srv.Handler())
	client := newClient(newTestServer(t, h)+"/v1", "k")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.CreateChatCompletionStream(ctx, userRequest("hi"))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	var content, args string
	for content != "partial answer" || args != `{"a":1}` {
		chunk, err := stream.Recv()
		if err != nil {
			t.Fatalf("Recv before the hang: %v (content so far %q, args %q)", err, content, args)
		}
		if chunk.Choices[0].FinishReason != "" {
			t.Fatalf("a hanging stream sent finish_reason %q", chunk.Choices[0].FinishReason)
		}
		content += chunk.Choices[0].Delta.Content
		for _, tc := range chunk.Choices[0].Delta.ToolCalls {
			args += tc.Function.Arguments
		}
	}
	cancel()
	if _, err := stream.Recv(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Recv after cancel = %v, want an error other than EOF", err)
	}
	waitHandlerDone(t, done, "the client cancelled mid-stream")
}

func TestCloseReleasesHangingHandlerAndDropsConnection(t *testing.T) {
	srv := New(Script{{Hang: true}})
	h, done := trackedHandler(srv.Handler())
	client := newClient(newTestServer(t, h)+"/v1", "k")
	errc := make(chan error, 1)
	go func() {
		_, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
		errc <- err
	}()
	waitRecorded(t, srv, 1)
	srv.Close()
	waitHandlerDone(t, done, "Close")
	var apiErr *openai.APIError
	if err := <-errc; err == nil || errors.As(err, &apiErr) {
		t.Errorf("client error = %v, want a transport error", err)
	}
}

func TestShortDelayStillAnswers(t *testing.T) {
	srv := New(Script{{Delay: 10 * time.Millisecond, Text: "late"}, {Delay: time.Millisecond}})
	client := newClient(srv.Start(t), "k")
	for _, want := range []string{"late", ""} {
		resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != want || resp.Choices[0].FinishReason != openai.FinishReasonStop {
			t.Errorf("answer = %q (%s), want %q (stop)", got, resp.Choices[0].FinishReason, want)
		}
	}
	srv.AssertNoFailures(t)
}

// newTestServer serves h on loopback for the life of the test.
func newTestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}
