package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

func TestCheckWire(t *testing.T) {
	const (
		user     = `{"role":"user","content":"hi"}`
		callAB   = `{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"s__t","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"s__u","arguments":"{}"}}]}`
		answerA  = `{"role":"tool","tool_call_id":"a","content":"ra"}`
		answerB  = `{"role":"tool","tool_call_id":"b","content":"rb"}`
		callC    = `{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"s__t","arguments":"{}"}}]}`
		answerC  = `{"role":"tool","tool_call_id":"c","content":"rc"}`
		finalMsg = `{"role":"assistant","content":"done"}`
	)
	body := func(model string, extra string, msgs ...string) string {
		return `{"model":"` + model + `"` + extra + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	tests := []struct {
		name string
		body string
		want []string // substrings, one per expected failure, in order
	}{
		{"plain user turn", body("m", "", user), nil},
		{"parallel calls answered in any order", body("m", "", user, callAB, answerB, answerA, finalMsg, user), nil},
		{"two tool turns", body("m", "", user, callAB, answerA, answerB, callC, answerC), nil},
		{"no model", body("", "", user), []string{"no model"}},
		{"no messages", body("m", ""), []string{"no messages"}},
		{"stream_options without stream", body("m", `,"stream_options":{"include_usage":true}`, user), []string{"stream_options without stream"}},
		{"unknown role", body("m", "", `{"role":"robot","content":"x"}`), []string{`unknown role "robot"`}},
		{"tool message without id", body("m", "", user, callC, `{"role":"tool","content":"r"}`),
			[]string{"messages[2]: tool message without tool_call_id", "tool calls c of messages[1] are not answered"}},
		{"unknown tool_call_id", body("m", "", user, callC, answerC, `{"role":"tool","tool_call_id":"zzz","content":"r"}`),
			[]string{`messages[3]: tool_call_id "zzz" matches no tool call`}},
		{"tool message before any call", body("m", "", user, answerA), []string{`messages[1]: tool_call_id "a" matches no tool call`}},
		{"answered twice", body("m", "", user, callC, answerC, answerC), []string{`messages[3]: tool_call_id "c" is answered more than once`}},
		{"one of two calls unanswered", body("m", "", user, callAB, answerA), []string{"tool calls b of messages[1] are not answered"}},
		{"unanswered before next turn", body("m", "", user, callAB, answerA, user),
			[]string{"messages[3]: tool calls b of messages[1] are not answered before it"}},
		{"answer to an earlier turn", body("m", "", user, callAB, answerA, answerB, callC, answerA, answerC),
			[]string{`messages[5]: tool_call_id "a" is answered more than once`}},
		{"call id reused", body("m", "", user, callC, answerC, callC, answerC),
			[]string{`messages[3].tool_calls[0]: id "c" is used twice`}},
		{"call without id, type or name", body("m", "", user, `{"role":"assistant","tool_calls":[{"type":"x","function":{}},{"id":"d","type":"x","function":{}}]}`, `{"role":"tool","tool_call_id":"d","content":"r"}`),
			[]string{"tool_calls[0]: no id", `tool_calls[1]: type "x"`, "tool_calls[1]: no function name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var req chatRequest
			if err := json.Unmarshal([]byte(tt.body), &req); err != nil {
				t.Fatal(err)
			}
			got := checkWire(req)
			if len(got) != len(tt.want) {
				t.Fatalf("failures = %q, want %d matching %q", got, len(tt.want), tt.want)
			}
			for i := range got {
				if !strings.Contains(got[i], tt.want[i]) {
					t.Errorf("failure %d = %q, want it to contain %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// TestWireChecksRecordWithoutChangingTheAnswer drives a full tool turn from
// go-openai, then a broken one.
func TestWireChecksRecordWithoutChangingTheAnswer(t *testing.T) {
	srv := New(Script{
		{ToolCalls: []ToolCall{{Name: "s__t", Arguments: "{}"}, {Name: "s__u", Arguments: "{}"}}},
		{Text: "done"},
		{Text: "again"},
	})
	client := newClient(srv.Start(t), "k")
	req := userRequest("hi")
	resp, err := client.CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	assistant := resp.Choices[0].Message
	req.Messages = append(req.Messages, assistant)
	for _, call := range assistant.ToolCalls {
		req.Messages = append(req.Messages, openai.ChatCompletionMessage{Role: "tool", ToolCallID: call.ID, Content: "result of " + call.ID})
	}
	if _, err := client.CreateChatCompletion(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	srv.AssertNoFailures(t)

	req.Messages = req.Messages[:len(req.Messages)-1] // drop the answer to the second call
	resp, err = client.CreateChatCompletion(context.Background(), req)
	if err != nil || resp.Choices[0].Message.Content != "again" {
		t.Fatalf("broken transcript answered %+v, %v; want the scripted text", resp, err)
	}
	failures := srv.Failures()
	if len(failures) != 1 || !strings.Contains(failures[0], "request 2: tool calls call_0_1 of messages[1] are not answered") {
		t.Errorf("failures = %q", failures)
	}
}

func TestExpectations(t *testing.T) {
	const canary = "CANARY-<7f3a>&\"q\"" // characters go-openai escapes in JSON
	msgs := []openai.ChatCompletionMessage{
		{Role: "user", Content: "first question"},
		{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "c1", Type: "function", Function: openai.FunctionCall{Name: "s__t", Arguments: "{}"}}}},
		{Role: "tool", ToolCallID: "c1", Content: `{"temp": 21}`},
	}
	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "s__t"}}}
	tests := []struct {
		name    string
		expect  Expect
		secret  string // extra user content
		wantErr []string
	}{
		{"all hold", Expect{LastToolResultContains: `"temp": 21`, LastUserContains: "first", ToolsInclude: []string{"s__t"}, ToolsExclude: []string{"s__hidden"}, BodyExcludes: []string{canary}}, "", nil},
		{"tool result mismatch", Expect{LastToolResultContains: "22"}, "", []string{`expect.lastToolResultContains "22": the last tool message does not contain it`}},
		{"user mismatch", Expect{LastUserContains: "second"}, "", []string{`expect.lastUserContains "second"`}},
		{"tool missing", Expect{ToolsInclude: []string{"s__t", "s__other"}}, "", []string{`expect.toolsInclude "s__other"`}},
		{"tool offered", Expect{ToolsExclude: []string{"s__t"}}, "", []string{`expect.toolsExclude "s__t"`}},
		{"canary leaked, escaped on the wire", Expect{BodyExcludes: []string{"unrelated", canary}}, canary, []string{"expect.bodyExcludes[1]: found in the request body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Script{{Text: "ok", Expect: &tt.expect}})
			client := newClient(srv.Start(t), "k")
			req := userRequest("")
			req.Messages = append([]openai.ChatCompletionMessage(nil), msgs...)
			if tt.secret != "" {
				req.Messages[0].Content += tt.secret
			}
			req.Tools = tools
			resp, err := client.CreateChatCompletion(context.Background(), req)
			failures := srv.Failures()
			if len(tt.wantErr) == 0 {
				if err != nil || resp.Choices[0].Message.Content != "ok" {
					t.Fatalf("answer = %+v, %v; want ok", resp, err)
				}
				srv.AssertNoFailures(t)
				return
			}
			var apiErr *openai.APIError
			if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 500 {
				t.Fatalf("error = %v, want a 500 APIError", err)
			}
			if len(failures) != len(tt.wantErr) {
				t.Fatalf("failures = %q, want %q", failures, tt.wantErr)
			}
			for i, want := range tt.wantErr {
				if !strings.Contains(failures[i], want) || !strings.Contains(apiErr.Message, want) {
					t.Errorf("failure %q / response %q should name %q", failures[i], apiErr.Message, want)
				}
			}
			if strings.Contains(strings.Join(failures, " ")+apiErr.Message, "CANARY") {
				t.Error("a failure or the error response repeats the canary")
			}
		})
	}
}

func TestGatekeeping(t *testing.T) {
	const key = "sk-test-SECRETKEY"
	valid := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name       string
		method     string
		path       string
		auth       string
		body       string
		wantStatus int
		wantFail   string // "" for none
	}{
		{"right key", "POST", "/v1/chat/completions", "Bearer " + key, valid, 200, ""},
		{"path without /v1", "POST", "/chat/completions", "Bearer " + key, valid, 200, ""},
		{"no key", "POST", "/v1/chat/completions", "", valid, 401, "no Authorization header"},
		{"wrong key", "POST", "/v1/chat/completions", "Bearer sk-other", valid, 401, "does not carry the configured API key"},
		{"key not as Bearer", "POST", "/v1/chat/completions", key, valid, 401, "does not carry the configured API key"},
		{"unknown path", "POST", "/v1/completions", "Bearer " + key, valid, 404, "unknown path /v1/completions"},
		{"GET", "GET", "/v1/chat/completions", "Bearer " + key, "", 405, "method GET, want POST"},
		{"not JSON", "POST", "/v1/chat/completions", "Bearer " + key, "{nope", 400, "body is not a chat-completions request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := New(Script{{Text: "first"}}, WithAPIKey(key))
			base := newTestServer(t, srv.Handler())
			req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
			}
			failures := srv.Failures()
			if tt.wantFail == "" {
				srv.AssertNoFailures(t)
			} else if len(failures) != 1 || !strings.Contains(failures[0], tt.wantFail) {
				t.Errorf("failures = %q, want one naming %q", failures, tt.wantFail)
			}
			if strings.Contains(strings.Join(failures, "")+string(body)+srv.AllText(), "SECRETKEY") {
				t.Error("the API key leaked into failures, the response or the recording")
			}
			if rec := srv.Recorded(); len(rec) != 1 || rec[0].Path != tt.path || rec[0].Method != tt.method {
				t.Errorf("recorded = %+v", rec)
			}
			if tt.wantStatus != 200 {
				// A rejected request consumes no step.
				client := newClient(base+"/v1", key)
				resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
				if err != nil || resp.Choices[0].Message.Content != "first" {
					t.Errorf("follow-up = %+v, %v; want the first step", resp, err)
				}
			}
		})
	}
}

func TestScriptExhausted(t *testing.T) {
	srv := New(Script{{Text: "only"}})
	client := newClient(srv.Start(t), "k")
	for _, want := range []string{"only", "script exhausted", "script exhausted"} {
		resp, err := client.CreateChatCompletion(context.Background(), userRequest("hi"))
		if err != nil || resp.Choices[0].Message.Content != want {
			t.Fatalf("answer = %+v, %v; want %q", resp, err, want)
		}
	}
	want := []string{"request 1: script exhausted (1 steps)", "request 2: script exhausted (1 steps)"}
	if got := srv.Failures(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("failures = %q, want %q", got, want)
	}
	if rec := srv.Recorded(); rec[0].Step != 0 || rec[1].Step != -1 {
		t.Errorf("steps = %d, %d; want 0, -1", rec[0].Step, rec[1].Step)
	}
}
