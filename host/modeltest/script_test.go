package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"
)

func TestParseScript(t *testing.T) {
	src := `[
		{"text": "hello", "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
		{"toolCalls": [{"name": "srv__tool", "arguments": "{\"a\":", "id": "call_1"}, {"name": "srv__other"}], "text": "calling"},
		{"status": 429, "retryAfter": "1", "body": "slow down"},
		{"delay": "1.5s", "text": "late", "expect": {"lastToolResultContains": "ok", "toolsInclude": ["srv__tool"]}},
		{"hang": true}
	]`
	want := Script{
		{Text: "hello", Usage: &Usage{PromptTokens: 5, CompletionTokens: 2}},
		{Text: "calling", ToolCalls: []ToolCall{{Name: "srv__tool", Arguments: `{"a":`, ID: "call_1"}, {Name: "srv__other"}}},
		{Status: 429, RetryAfter: "1", Body: "slow down"},
		{Delay: 1500 * time.Millisecond, Text: "late", Expect: &Expect{LastToolResultContains: "ok", ToolsInclude: []string{"srv__tool"}}},
		{Hang: true},
	}
	got, err := ParseScript([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseScript (-want +got):\n%s", diff)
	}
	// Tests build scripts in Go and hand them to the binary as JSON.
	encoded, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(encoded), `"delay":"1.5s"`) {
		t.Errorf("encoded delay is not a duration string: %s", encoded)
	}
	again, err := ParseScript(encoded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestParseScriptRejects(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"not an array", `{"text":"x"}`, "cannot unmarshal"},
		{"trailing data", `[] []`, "trailing data"},
		{"unknown key", `[{"txt": "typo"}]`, `unknown field "txt"`},
		{"unknown tool call key", `[{"toolCalls": [{"name": "a", "args": "{}"}]}]`, `unknown field "args"`},
		{"bad delay", `[{"delay": "soon"}]`, "delay"},
		{"numeric delay", `[{"delay": 5}]`, "delay"},
		{"negative delay", `[{"delay": "-1s"}]`, "step 0: delay is negative"},
		{"status not an error", `[{"text": "a"}, {"status": 200}]`, "step 1: status 200 is not an HTTP error"},
		{"status with text", `[{"status": 500, "text": "a"}]`, "cannot also have text"},
		{"status with hang", `[{"status": 500, "hang": true}]`, "cannot also hang"},
		{"retryAfter without status", `[{"retryAfter": "1"}]`, "need a status"},
		{"tool call without name", `[{"toolCalls": [{"arguments": "{}"}]}]`, "toolCalls[0] has no name"},
		{"duplicate ids", `[{"toolCalls": [{"name": "a", "id": "x"}, {"name": "b", "id": "x"}]}]`, `toolCalls[1] repeats id "x"`},
		{"negative usage", `[{"usage": {"prompt_tokens": -1, "completion_tokens": 0}}]`, "usage is negative"},
		{"more cached than prompt tokens", `[{"usage": {"prompt_tokens": 1, "completion_tokens": 0, "cached_tokens": 2}}]`, "more cached tokens than prompt tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseScript([]byte(tt.src))
			if !errors.Is(err, ErrInvalidScript) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseScript error = %v, want ErrInvalidScript containing %q", err, tt.want)
			}
		})
	}
}

func TestInvalidScriptAnswersEveryRequestWith500(t *testing.T) {
	srv := New(Script{{Status: 700}})
	client := newClient(newTestServer(t, srv.Handler())+"/v1", "k")
	_, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 || !strings.Contains(apiErr.Message, "step 0: status 700") {
		t.Errorf("error = %v, want 500 naming the bad step", err)
	}
	if f := srv.Failures(); len(f) != 1 || !strings.Contains(f[0], "invalid fakellm script") {
		t.Errorf("failures = %q", f)
	}
}
