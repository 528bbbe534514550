package ccstream

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

func TestParseUserMessage(t *testing.T) {
	tests := []struct {
		line, want, err string
	}{
		{`{"type":"user","message":{"role":"user","content":"hello"}}`, "hello", ""},
		{`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},"session_id":"x","parent_tool_use_id":null}`, "a\nb", ""},
		{`{"type":"user","message":{"role":"user","content":[{"type":"image","source":{}}]}}`, "", "only text"},
		{`{"type":"assistant","message":{"role":"assistant","content":"x"}}`, "", "want a user message"},
		{`{"type":"user","message":{"role":"user","content":"  "}}`, "", "no text"},
		{`{"type":"user","message":{"role":"user","content":7}}`, "", "neither a string"},
		{`not json`, "", "not a JSON object"},
	}
	for _, tc := range tests {
		got, err := ParseUserMessage([]byte(tc.line))
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseUserMessage(%s) = %q, %v; want %q, error %q", tc.line, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParseUserMessage(f *testing.F) {
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":"hello"}}`))
	f.Add([]byte(`{"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if got, err := ParseUserMessage(line); err == nil && strings.TrimSpace(got) == "" {
			t.Fatalf("an empty prompt from %q", line)
		}
	})
}

// The result of a turn counts its denials (refused approvals only), its
// cost at the model's price, and maps each end reason to its subtype.
func TestWriterResult(t *testing.T) {
	one, ms := 1, int64(5)
	events := []host.Event{
		{Type: host.EventSessionStart, SessionID: "s", Model: "m", Tools: []string{"srv__a"}},
		{Type: host.EventToolCall, SessionID: "s", Step: 1, CallID: "c1", Server: "srv", Tool: "a", Arguments: json.RawMessage(`{"x":1}`)},
		{Type: host.EventToolCall, SessionID: "s", Step: 1, CallID: "c2", Server: "srv", Tool: "b", Arguments: json.RawMessage(`[1]`)},
		{Type: host.EventApproval, SessionID: "s", Step: 1, CallID: "c1", Server: "srv", Tool: "a", Decision: "ask", Outcome: "approved", Approvers: &one},
		{Type: host.EventApproval, SessionID: "s", Step: 1, CallID: "c2", Server: "srv", Tool: "b", Decision: "deny", Outcome: "denied_by_rule"},
		{Type: host.EventToolResult, SessionID: "s", Step: 1, CallID: "c1", Content: []mcp.Content{mcp.NewTextContent("ok")}},
	}
	for _, tc := range []struct {
		reason, subtype string
		isError         bool
	}{{host.EndDone, "success", false}, {host.EndMaxSteps, "error_max_turns", true}, {host.EndError, "error_during_execution", true}, {host.EndInterrupted, "error_during_execution", true}} {
		var out bytes.Buffer
		w := New(&out, Options{Prices: map[string]config.Price{"m": {Input: 1, Output: 2, CachedInput: 0.5}}})
		end := host.Event{Type: host.EventSessionEnd, SessionID: "s", Reason: tc.reason, Steps: 1, DurationMs: &ms, APIDurationMs: &ms,
			Usage: &host.Usage{PromptTokens: 1_000_000, CompletionTokens: 500_000}}
		for _, e := range append(events, end) {
			if err := w.Event(e); err != nil {
				t.Fatal(err)
			}
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		var res struct {
			Subtype           string   `json:"subtype"`
			IsError           bool     `json:"is_error"`
			TotalCostUSD      float64  `json:"total_cost_usd"`
			Result            *string  `json:"result"`
			Errors            []string `json:"errors"`
			PermissionDenials []Denial `json:"permission_denials"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatal(err)
		}
		if res.Subtype != tc.subtype || res.IsError != tc.isError || res.TotalCostUSD != 2 || (res.Result != nil) == tc.isError || (res.Errors != nil) != tc.isError {
			t.Errorf("%s: result %s", tc.reason, lines[len(lines)-1])
		}
		if len(res.PermissionDenials) != 1 || res.PermissionDenials[0].ToolName != "mcp__srv__b" || string(res.PermissionDenials[0].ToolInput) != `{"arguments":[1]}` {
			t.Errorf("%s: denials %+v, want c2 with its arguments wrapped in an object", tc.reason, res.PermissionDenials)
		}
	}
}

// The prompt tokens an OpenAI-compatible model read from its cache are the
// result's cache_read_input_tokens (and not input_tokens, as the Messages API
// counts them), and they cost llm.prices' cachedInput.
func TestResultCountsCachedPromptTokens(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, Options{Prices: map[string]config.Price{"m": {Input: 1, Output: 2, CachedInput: 0.25}}})
	for _, e := range []host.Event{
		{Type: host.EventSessionStart, SessionID: "s", Model: "m"},
		{Type: host.EventSessionEnd, SessionID: "s", Reason: host.EndDone, Steps: 1,
			Usage: &host.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 400_000, CompletionTokens: 100_000}},
	} {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res struct {
		TotalCostUSD float64 `json:"total_cost_usd"`
		Usage        struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
			OutputTokens         int `json:"output_tokens"`
		} `json:"usage"`
		ModelUsage map[string]struct {
			InputTokens          int     `json:"inputTokens"`
			CacheReadInputTokens int     `json:"cacheReadInputTokens"`
			CostUSD              float64 `json:"costUSD"`
		} `json:"modelUsage"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatal(err)
	}
	const cost = 0.6 + 0.1 + 0.2 // uncached input, cached input, output
	if res.Usage.InputTokens != 600_000 || res.Usage.CacheReadInputTokens != 400_000 || res.Usage.OutputTokens != 100_000 {
		t.Errorf("usage %+v, want 600000 input, 400000 read from the cache, 100000 output", res.Usage)
	}
	if mu := res.ModelUsage["m"]; mu.InputTokens != 600_000 || mu.CacheReadInputTokens != 400_000 || math.Abs(mu.CostUSD-cost) > 1e-9 {
		t.Errorf("modelUsage %+v", mu)
	}
	if math.Abs(res.TotalCostUSD-cost) > 1e-9 {
		t.Errorf("total_cost_usd %v, want %v", res.TotalCostUSD, cost)
	}
}

// ResultOnly writes the result line alone (`--output-format json`), with
// what the turn's other events told it: the refused call and the model.
func TestResultOnly(t *testing.T) {
	var out bytes.Buffer
	w := New(&out, Options{ResultOnly: true})
	for _, e := range []host.Event{
		{Type: host.EventSessionStart, SessionID: "s", Model: "m"},
		{Type: host.EventAssistant, SessionID: "s", Step: 1, Text: "Looking."},
		{Type: host.EventToolCall, SessionID: "s", Step: 1, CallID: "c1", Server: "srv", Tool: "drop", Arguments: json.RawMessage(`{"x":1}`)},
		{Type: host.EventApproval, SessionID: "s", Step: 1, CallID: "c1", Server: "srv", Tool: "drop", Decision: "deny", Outcome: "denied_by_rule"},
		{Type: host.EventSessionEnd, SessionID: "s", Reason: host.EndDone, Steps: 1, Result: "Done."},
	} {
		if err := w.Event(e); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want the result alone:\n%s", len(lines), out.String())
	}
	var res struct {
		Type              string                `json:"type"`
		Result            string                `json:"result"`
		ModelUsage        map[string]modelUsage `json:"modelUsage"`
		PermissionDenials []Denial              `json:"permission_denials"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := res.ModelUsage["m"]; res.Type != "result" || res.Result != "Done." || !ok || len(res.PermissionDenials) != 1 || string(res.PermissionDenials[0].ToolInput) != `{"x":1}` {
		t.Errorf("result %s", lines[0])
	}
}
