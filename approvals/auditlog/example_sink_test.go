package auditlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// An approver written as a function allows a write; the decision's audit
// record goes to two sinks at once: a JSON-lines writer and a function that
// counts outcomes.
func ExampleMultiSink() {
	policy, err := rules.NewPolicy(rules.Config{
		Unclassified: rules.UnclassifiedInfer,
		Rules: []rules.Rule{
			{ID: "writes", When: rules.Match{Category: []string{"mutate"}}, Decide: "ask"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	approver := approvals.ApproverFunc(func(_ context.Context, _ *approvals.Request) (approvals.Verdict, error) {
		vote := approvals.Vote{ApproverID: "ops-bot", Decision: approvals.VoteAllow, TS: time.Now()}
		return approvals.Verdict{Votes: []approvals.Vote{vote}}, nil
	})
	gate, err := approvals.NewGate(approvals.GateConfig{Policy: policy, Approver: approver})
	if err != nil {
		fmt.Println(err)
		return
	}

	var lines bytes.Buffer
	outcomes := map[rules.Outcome]int{}
	sink := auditlog.MultiSink{
		auditlog.NewWriterSink(&lines),
		auditlog.SinkFunc(func(_ context.Context, r *auditlog.Record) error {
			outcomes[r.Outcome]++
			return nil
		}),
	}
	defer sink.Close()

	tool := risk.ToolInfo{Name: "update_order", InputSchema: json.RawMessage(`{"type":"object"}`)}
	check := approvals.Check{
		SessionID: "sess-1", Subject: "bob", CallID: "call-1",
		Call:        rules.Call{Server: "orders", Tool: tool.Name, Args: json.RawMessage(`{"id":"42"}`), TrustLevel: 2},
		Risk:        policy.Effective("orders", false, tool),
		ToolDefHash: tool.DefinitionHash(),
	}
	res, err := gate.Check(context.Background(), check)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := sink.Write(context.Background(), auditlog.NewRecord(check, res, time.Now())); err != nil {
		fmt.Println(err)
		return
	}

	var rec struct {
		Phase     string `json:"phase"`
		Tool      string `json:"tool"`
		Outcome   string `json:"outcome"`
		Approvers []struct {
			ID string `json:"id"`
		} `json:"approvers"`
	}
	if err := json.Unmarshal(lines.Bytes(), &rec); err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range rec.Approvers {
		fmt.Println(rec.Phase, rec.Tool, rec.Outcome, "by", a.ID)
	}
	fmt.Println("approved calls:", outcomes[rules.OutcomeApproved])
	// Output:
	// decision update_order approved by ops-bot
	// approved calls: 1
}
