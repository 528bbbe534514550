package mcptest

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestLegacyTaskAsksDuringResult: on the raw stdio wire, a 2025-11-25
// task that needs input asks with elicitation/create while tasks/result
// is pending, one question at a time, each tagged with its task; the
// answers decide what tasks/result finally answers.
func TestLegacyTaskAsksDuringResult(t *testing.T) {
	tools := []byte(`[{"name": "asking_job", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
		"x-test": {"text": "job done", "task": {"inputs": 2, "polls": 1}}}]`)
	accept := func(answer string) map[string]any {
		return map[string]any{"result": map[string]any{"action": "accept", "content": map[string]any{"answer": answer}}}
	}
	cases := []struct {
		name    string
		answers []map[string]any // the client's answers to the questions, in turn
		want    string           // in the final answer
	}{
		{"accepted", []map[string]any{accept("one"), accept("two")}, `answers: one, two`},
		{"declined", []map[string]any{{"result": map[string]any{"action": "decline"}}}, `"isError":true`},
		{"refused", []map[string]any{{"error": map[string]any{"code": -32601, "message": "no handler"}}}, `input 1 was not answered: no handler`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			peer, _ := newRPC(t, "stdio", false, nil, Options{ToolsJSON: tools})
			raw := peer.(*stdioRPC).raw
			resp, _ := peer.call("tools/call", map[string]any{"name": "asking_job", "arguments": map[string]any{}, "task": map[string]any{}})
			var created struct {
				Task struct {
					TaskID string `json:"taskId"`
				} `json:"task"`
			}
			if resp.Error != nil || json.Unmarshal(resp.Result, &created) != nil || created.Task.TaskID == "" {
				t.Fatalf("tools/call: %s %v", resp.Result, resp.Error)
			}
			id := created.Task.TaskID
			for status := ""; status != "input_required"; {
				resp, _ = peer.call("tasks/get", map[string]any{"taskId": id})
				var task struct {
					Status string `json:"status"`
				}
				if resp.Error != nil || json.Unmarshal(resp.Result, &task) != nil || task.Status == "completed" {
					t.Fatalf("tasks/get: %s %v", resp.Result, resp.Error)
				}
				status = task.Status
			}
			raw.send(map[string]any{"jsonrpc": "2.0", "id": "result-1", "method": "tasks/result", "params": map[string]any{"taskId": id}})
			for i, answer := range tc.answers {
				var ask struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Message string `json:"message"`
						Meta    map[string]struct {
							TaskID string `json:"taskId"`
						} `json:"_meta"`
					} `json:"params"`
				}
				line := raw.next()
				if json.Unmarshal(line, &ask) != nil || ask.Method != "elicitation/create" || len(ask.ID) == 0 {
					t.Fatalf("question %d: got %s, want an elicitation/create request", i+1, line)
				}
				if ask.Params.Meta["io.modelcontextprotocol/related-task"].TaskID != id || !strings.Contains(ask.Params.Message, "Input") {
					t.Errorf("question %d does not name its task or its input: %s", i+1, line)
				}
				answer["jsonrpc"], answer["id"] = "2.0", ask.ID
				raw.send(answer)
			}
			line := raw.next()
			if !strings.Contains(string(line), `"id":"result-1"`) || !strings.Contains(string(line), tc.want) {
				t.Errorf("tasks/result answered %s, want %s in it", line, tc.want)
			}
		})
	}
}
