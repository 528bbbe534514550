package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/modeltest"
)

// TestTaskQuestionGoesToApprovers: a task that asks twice, first for a
// decision (a confirmation) and then for input, has the decision put to
// the session's approver as an approval request about the call's server
// and tool, with the server's question (masked) as its message, and the
// input elicited; the decision is audited and announced with the task's
// id. Approved, the task completes with both answers; denied, the
// question is declined (the task ends with isError), nothing is elicited,
// and the call's own decision is not remembered as refused.
func TestTaskQuestionGoesToApprovers(t *testing.T) {
	for _, approve := range []bool{true, false} {
		t.Run(fmt.Sprintf("approved=%v", approve), func(t *testing.T) {
			tools := `[{"name": "long_job", "inputSchema": {"type": "object"},
				"x-test": {"text": "job done", "task": {"inputs": 2, "decide": [1], "pollIntervalMs": 1}}}]`
			url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(tools)})
			cfg := &config.Config{MCPServers: map[string]*config.Server{
				"db": {URL: url, Type: config.TransportHTTP, CallTimeout: 5 * time.Second, Tasks: config.TasksAuto, TaskTimeout: 5 * time.Second},
			}}
			cfg.Approvals = readsAllowed()
			cfg.ApplyDefaults()
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			var elicited atomic.Int32
			elicit := func(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				n := elicited.Add(1)
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
					Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"answer": fmt.Sprintf("answer %d", n)}}}, nil
			}
			redactor := bindings.NewRedactor()
			redactor.Add("long_job?") // the question's last word: masked where approvers see it
			sink := &recordSink{}
			h, err := New(Options{Config: cfg, Elicitation: elicit, Audit: sink, Redactor: redactor})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close() })
			var (
				mu    sync.Mutex
				asked []*approvals.Request
			)
			approver := approvals.ApproverFunc(func(_ context.Context, req *approvals.Request) (approvals.Verdict, error) {
				mu.Lock()
				asked = append(asked, req)
				mu.Unlock()
				d := approvals.VoteDeny
				if approve {
					d = approvals.VoteAllow
				}
				return approvals.Verdict{Votes: []approvals.Vote{{ApproverID: "alice", Decision: d, TS: time.Now()}}}, nil
			})
			want := "answers: confirm=true, answer 1"
			if !approve {
				want = "input 1 decline"
			}
			script := modeltest.Script{
				{ToolCalls: []modeltest.ToolCall{{Name: "db__long_job", Arguments: `{}`}}},
				{Text: "ok", Expect: &modeltest.Expect{LastToolResultContains: want}},
			}
			scripted := scriptModel(t, h, script)
			s := h.NewSession(SessionOptions{Subject: "bob", Approver: approver})
			events := collect(t, s, context.Background(), "run the job", TurnOptions{})
			scripted.AssertNoFailures(t)

			mu.Lock()
			n := len(asked)
			mu.Unlock()
			if n != 1 {
				t.Fatalf("approver asked %d times, want once (the decision only)", len(asked))
			}
			req := asked[0] // the approver is not asked again until the next call
			if req.Server != "db" || req.Tool != "long_job" || req.Approvers != 1 || req.SessionGrantable {
				t.Errorf("request = %+v, want one approver for db/long_job, not session-grantable", req)
			}
			if !strings.Contains(req.Message, "Confirm step 1 of 2 of") || strings.Contains(req.Message, "long_job?") {
				t.Errorf("request message %q, want the server's question, masked", req.Message)
			}
			wantElicited := int32(1)
			if !approve {
				wantElicited = 0
			}
			if n := elicited.Load(); n != wantElicited {
				t.Errorf("elicited %d times, want %d", n, wantElicited)
			}
			var taskIDs []string
			for _, e := range events {
				if (e.Type == EventApprovalRequested || e.Type == EventApproval) && e.TaskID != "" {
					taskIDs = append(taskIDs, string(e.Type)+":"+e.Outcome)
				}
			}
			outcome := string(rules.OutcomeApproved)
			if !approve {
				outcome = string(rules.OutcomeRejected)
			}
			if fmt.Sprint(taskIDs) != fmt.Sprint([]string{"approval_requested:", "approval:" + outcome}) {
				t.Errorf("task question events %v, want approval_requested and approval (%s) with the task id", taskIDs, outcome)
			}
			sink.mu.Lock()
			var question *auditlog.Record
			for _, r := range sink.records {
				if slices.Contains(r.Rules, TaskQuestionRule) {
					question = r
				}
			}
			sink.mu.Unlock()
			if question == nil {
				t.Fatal("no audit record of the task's question")
			}
			if question.Phase != auditlog.PhaseDecision || question.Outcome != rules.Outcome(outcome) ||
				question.Server != "db" || question.Tool != "long_job" || len(question.Approvers) != 1 ||
				strings.Contains(question.ToolDefHash, TaskQuestionRule) {
				t.Errorf("question record %+v", question)
			}
			last := sink.last(t)
			if last.Phase != auditlog.PhaseResult || last.Outcome != rules.OutcomeAutoAllowed {
				t.Errorf("last record %+v, want the call's result record", last)
			}
			// The call itself runs again without asking: the refused
			// question is not a refusal of the call.
			if _, err := s.CallTool(context.Background(), "db", "long_job", []byte(`{}`)); err != nil {
				t.Errorf("the call again: %v", err)
			}
			if n := len(srv.Recording().Messages("tools/call")); n != 2 {
				t.Errorf("%d tools/call, want 2", n)
			}
		})
	}
}
