package taskwire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

func TestTaskPollInterval(t *testing.T) {
	ms := func(n int64) *int64 { return &n }
	tests := []struct {
		suggested *int64
		want      time.Duration
	}{
		{nil, DefaultPoll},
		{ms(0), DefaultPoll},
		{ms(-5), DefaultPoll},
		{ms(1), MinPoll},
		{ms(2500), 2500 * time.Millisecond},
		{ms(3_600_000), MaxPoll},
		{ms(1 << 62), MaxPoll},
	}
	for _, tc := range tests {
		if got := (&Task{PollIntervalMs: tc.suggested}).Wait(); got != tc.want {
			t.Errorf("Wait(%v) = %v, want %v", tc.suggested, got, tc.want)
		}
	}
}

func TestParseTask(t *testing.T) {
	long := strings.Repeat("x", MaxIDBytes+1)
	tests := []struct {
		name, raw, want string
		ok              bool
	}{
		{"working", `{"taskId":"t1","status":"working"}`, "", true},
		{"the asked id", `{"taskId":"t1","status":"completed","result":{"content":[]}}`, "t1", true},
		{"another id", `{"taskId":"t2","status":"working"}`, "t1", false},
		{"no id", `{"status":"working"}`, "", false},
		{"long id", `{"taskId":"` + long + `","status":"working"}`, "", false},
		{"unknown status", `{"taskId":"t1","status":"sleeping"}`, "", false},
		{"not an object", `[1]`, "", false},
		{"not JSON", `{`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(json.RawMessage(tc.raw), tc.want)
			if (err == nil) != tc.ok {
				t.Fatalf("Parse = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, wirecheck.ErrProtocol) {
				t.Errorf("error %v is not a protocol error", err)
			}
		})
	}
}

func FuzzParseTask(f *testing.F) {
	f.Add([]byte(`{"taskId":"t1","status":"input_required","inputRequests":{"k":{"method":"elicitation/create","params":{}}}}`), "t1")
	f.Add([]byte(`{"taskId":"t1","status":"failed","error":{"code":-1,"message":"m"}}`), "")
	f.Fuzz(func(t *testing.T, raw []byte, want string) {
		task, err := Parse(raw, want)
		if err != nil {
			return
		}
		if task.TaskID == "" || len(task.TaskID) > MaxIDBytes || (want != "" && task.TaskID != want) {
			t.Fatalf("accepted task id %q (want %q)", task.TaskID, want)
		}
		if d := task.Wait(); d < MinPoll || d > MaxPoll {
			t.Fatalf("poll interval %v out of bounds", d)
		}
	})
}

func TestDecisionField(t *testing.T) {
	tests := []struct {
		name, params, field string
		ok                  bool
	}{
		{"one boolean", `{"message":"m","requestedSchema":{"type":"object","properties":{"confirm":{"type":"boolean"}}}}`, "confirm", true},
		{"form mode, required boolean", `{"mode":"form","message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","default":false}},"required":["ok"]}}`, "ok", true},
		{"nothing asked", `{"message":"m","requestedSchema":{"type":"object","properties":{}}}`, "", true},
		{"no properties member", `{"message":"m","requestedSchema":{"type":"object"}}`, "", true},
		{"a string", `{"message":"m","requestedSchema":{"type":"object","properties":{"answer":{"type":"string"}}}}`, "", false},
		{"a boolean and more", `{"message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"},"why":{"type":"string"}}}}`, "", false},
		{"an enum boolean", `{"message":"m","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean","enum":[true]}}}}`, "", false},
		{"url mode", `{"mode":"url","message":"m","url":"https://example.test","elicitationId":"e"}`, "", false},
		{"not an object schema", `{"message":"m","requestedSchema":{"type":"string"}}`, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var p mcp.ElicitationParams
			if err := json.Unmarshal([]byte(tc.params), &p); err != nil {
				t.Fatal(err)
			}
			field, ok := DecisionField(&p)
			if field != tc.field || ok != tc.ok {
				t.Errorf("DecisionField = %q, %v, want %q, %v", field, ok, tc.field, tc.ok)
			}
		})
	}
}

// taskListens are the subscriptions/listen requests that named a task.
