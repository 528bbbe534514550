package serve

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
)

// TestTaskQuestionIsAnApproval: a task that asks for a decision during a
// turn (a confirmation) is put to serve's approvals API, as the call's
// server and tool with the server's question as its message, rather than
// declined; the approver's allow goes back to the task, which completes,
// and the turn's events carry the question's approval with the task id.
func TestTaskQuestionIsAnApproval(t *testing.T) {
	jobs, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "long_job", "inputSchema": {"type": "object"},
		"x-test": {"text": "job done", "task": {"inputs": 1, "decide": [1], "pollIntervalMs": 1}}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = jobs.Close() })
	fixtureTransports = map[string]host.TransportFactory{"jobs": func() (transport.Interface, error) { return jobs.InProcessTransport(), nil }}
	t.Cleanup(func() { fixtureTransports = nil })
	f := newFixtureWith(t, nil, func(c *config.Config) {
		c.MCPServers["jobs"] = &config.Server{Tasks: config.TasksAuto}
		str := func(v string) *string { return &v }
		c.Approvals.Catalogue = append(c.Approvals.Catalogue, rules.CatalogueEntry{Server: "jobs", Tool: "long_job",
			Metadata: risk.RawMetadata{Category: str("read"), RiskLevel: str("low"), BlastRadius: str("item"),
				Reversibility: str("auto"), ApprovalRecommendation: str("none"), MinTrustLevel: 1}})
	})
	s := f.createSession(nil)
	resp := f.startTurn(s.ID, "call jobs__long_job {}")
	defer resp.Body.Close()
	events := make(chan []parsedEvent, 1)
	go func() {
		evs, _ := readSSE(resp.Body, isEnd)
		events <- evs
	}()
	p := f.waitPending()
	if p.Server != "jobs" || p.Tool != "long_job" || !strings.Contains(p.Message, "Confirm step 1 of 1 of long_job") ||
		!slices.Contains(p.Rules, host.TaskQuestionRule) {
		t.Errorf("pending approval %+v, want the task's question about jobs/long_job", p)
	}
	status, body, _ := f.do("POST", "/v1/approvals/"+p.ID+"/votes", aliceToken, map[string]any{"decision": "allow"})
	if status != 200 {
		t.Fatalf("vote: %d %s", status, body)
	}
	evs := decodeEvents(t, <-events)
	var types []string
	var end, question wireEvent
	for _, e := range evs {
		if e.Type != host.EventToolTask {
			types = append(types, string(e.Type))
		}
		if e.Type == host.EventApproval && e.TaskID != "" {
			question = e
		}
		end = e
	}
	want := []string{"session_start", "tool_call", "approval", "approval_requested", "approval", "tool_result", "assistant", "session_end"}
	if !slices.Equal(types, want) {
		t.Errorf("events %v, want %v", types, want)
	}
	if question.Outcome != string(rules.OutcomeApproved) {
		t.Errorf("question's approval event %+v, want approved with the task id", question)
	}
	if !strings.Contains(end.Result, "answers: confirm=true") {
		raw, _ := json.Marshal(end)
		t.Errorf("end %s, want the task's result with the confirmation", raw)
	}
}
