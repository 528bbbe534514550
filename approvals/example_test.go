package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// A chat backend gates a call on a pending-approvals queue; an HTTP handler
// (here a goroutine) lists the request and resolves it.
func ExampleQueue() {
	pending := make(chan approvals.Pending, 1)
	queue := approvals.NewQueue(approvals.QueueOptions{
		// Notify approvers, e.g. post to a chat channel. Must not block.
		OnPending: func(p approvals.Pending) { pending <- p },
	})
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
	gate, err := approvals.NewGate(approvals.GateConfig{Policy: policy, Approver: queue})
	if err != nil {
		fmt.Println(err)
		return
	}

	handled := make(chan string)
	go func() { // the approval handler of the backend
		p := <-pending
		fmt.Printf("pending: %s/%s %s, needs %d approver(s)\n", p.Request.Server, p.Request.Tool, p.Request.Arguments, p.Needed)
		if err := queue.Resolve(p.ID, "alice", true, "ok for this order"); err != nil {
			fmt.Println(err)
		}
		handled <- p.ID
	}()

	tool := risk.ToolInfo{Name: "update_order", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	res, err := gate.Check(context.Background(), approvals.Check{
		SessionID: "sess-1", Subject: "bob", CallID: "call-1",
		Call:        rules.Call{Server: "orders", Tool: tool.Name, Args: json.RawMessage(`{"id":"42"}`), TrustLevel: 2},
		Risk:        policy.Effective("orders", false, tool),
		ToolDefHash: tool.DefinitionHash(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("outcome:", res.Outcome, "by", res.Votes[0].ApproverID)

	// A vote that arrives after the request was settled changes nothing.
	id := <-handled
	err = queue.Resolve(id, "carol", false, "")
	fmt.Println("late vote ignored:", errors.Is(err, approvals.ErrAlreadyResolved))
	// Output:
	// pending: orders/update_order {"id":"42"}, needs 1 approver(s)
	// outcome: approved by alice
	// late vote ignored: true
}

// What the model reads when an approver declines.
func ExampleModelMessage() {
	fmt.Println(approvals.ModelMessage(rules.OutcomeRejected, rules.ReasonDeclined, "use the staging database\x1b[0m"))
	// Output:
	// The tool call was not executed: an approver declined it. Approver note: "use the staging database[0m". Do not retry the same call; continue without it or ask the user how to proceed.
}
