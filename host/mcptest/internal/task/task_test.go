package task

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/host/mcptest/internal/toolset"
)

// TestSteps: a task steps once per poll, asks its input, takes the answer
// under its key, and completes with the tool's result and the answers.
func TestSteps(t *testing.T) {
	result := func() map[string]any { return map[string]any{"content": []any{}} }
	st := New("task-1", "build", toolset.TaskBehaviour{Inputs: 1, Polls: 1}, result)
	st.Lock()
	defer st.Unlock()
	var got []string
	for range 2 {
		st.Advance()
		got = append(got, st.Status())
	}
	if want := []string{"working", "input_required"}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	st.Update(json.RawMessage(`{"input-9": {"action": "accept", "content": {"answer": "no"}}}`))
	if !st.Asking() {
		t.Fatal("an answer under another key was taken")
	}
	st.Update(json.RawMessage(`{"input-1": {"action": "accept", "content": {"answer": "yes"}}}`))
	if st.Asking() || st.Round() != 1 {
		t.Fatalf("answer not taken: asking %v, round %d", st.Asking(), st.Round())
	}
	st.RunOn()
	res, err := st.Ended()
	if st.Status() != "completed" || err != nil {
		t.Fatalf("status %s, err %v", st.Status(), err)
	}
	if b, _ := json.Marshal(res); string(b) != `{"content":[{"text":"answers: yes","type":"text"}]}` {
		t.Errorf("result %s", b)
	}
	if w := st.Wire(); w["taskId"] != "task-1" || w["result"] == nil {
		t.Errorf("wire %v", w)
	}
}

// TestDeclined: a declined input completes the task as a tool error.
func TestDeclined(t *testing.T) {
	st := New("task-2", "build", toolset.TaskBehaviour{Inputs: 1}, nil)
	st.Lock()
	defer st.Unlock()
	st.Advance()
	st.Answer("decline", nil)
	if res, _ := st.Ended(); st.Status() != "completed" || res["isError"] != true {
		t.Errorf("status %s, result %v", st.Status(), res)
	}
}
