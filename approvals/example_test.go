package approvals_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/approvals"
)

// A chat backend gates a call on a pending-approvals queue; an HTTP handler
// (here a goroutine) lists the request and resolves it.
func ExampleQueue() {
	pending := make(chan approvals.Pending, 1)
	queue := approvals.NewQueue(approvals.QueueOptions{
		// Notify approvers, e.g. post to a chat channel. Must not block.
		OnPending: func(p approvals.Pending) { pending <- p },
	})
	policy, err := approvals.NewPolicy(approvals.Config{
		Unclassified: approvals.UnclassifiedInfer,
		Rules: []approvals.Rule{
			{ID: "writes", When: approvals.Match{Category: []string{"mutate"}}, Decide: "ask"},
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

	tool := approvals.ToolInfo{Name: "update_order", InputSchema: json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}}}`)}
	res, err := gate.Check(context.Background(), approvals.Check{
		SessionID: "sess-1", Subject: "bob", CallID: "call-1",
		Call:        approvals.Call{Server: "orders", Tool: tool.Name, Args: json.RawMessage(`{"id":"42"}`), TrustLevel: 2},
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

// An untrusted server declares its drop_database tool low risk; inference
// keeps it destroy/critical, and the rules ask two people.
func ExamplePolicy_Decide() {
	policy, err := approvals.NewPolicy(approvals.Config{
		Unclassified: approvals.UnclassifiedInfer,
		Rules: []approvals.Rule{
			{ID: "reads", When: approvals.Match{Category: []string{"read", "observe"}}, Decide: "allow"},
			{ID: "deletes", When: approvals.Match{Category: []string{"delete", "destroy"}}, Decide: "ask", Approvers: 2},
			{ID: "wide", When: approvals.Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny",
				Message: "organization-wide changes are not allowed from agents"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tool := approvals.ToolInfo{
		Name:        "drop_database",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"cluster":{"type":"string"}}}`),
		Annotations: json.RawMessage(`{"riskLevel":"low","category":"read"}`),
	}
	risk := policy.Effective("db", false, tool)
	fmt.Println("effective:", risk.Category, risk.RiskLevel, risk.BlastRadius, "from", risk.Source.RiskLevel)

	d := policy.Decide(risk, approvals.Call{Server: "db", Tool: tool.Name, Args: json.RawMessage(`{"name":"shop"}`), TrustLevel: 5})
	fmt.Println("decision:", d.Action, d.Approvers, "approvers, rules", d.Rules)

	d = policy.Decide(risk, approvals.Call{Server: "db", Tool: tool.Name, Args: json.RawMessage(`{"name":"shop","cluster":"*"}`), TrustLevel: 5})
	fmt.Println("decision:", d.Action, d.Outcome, d.Rules, "-", strings.Join(d.Escalations, "; "))

	d = policy.Decide(risk, approvals.Call{Server: "db", Tool: tool.Name, TrustLevel: 2})
	fmt.Println("decision:", d.Action, d.Outcome)
	// Output:
	// effective: destroy critical cluster from inferred
	// decision: ask 2 approvers, rules [deletes]
	// decision: deny denied_by_rule [deletes wide] - argument "cluster" is "*": blastRadius cluster -> organization
	// decision: deny trust_denied
}

// A terminal approver: the question and the answer.
func ExamplePrompt() {
	var terminal strings.Builder // os.Stdout in a real CLI
	prompt := approvals.NewPrompt(strings.NewReader("n\n"), &terminal, "operator")
	defer prompt.Close()
	v, err := prompt.Approve(context.Background(), &approvals.Request{
		Server: "orders", Tool: "delete_order", Arguments: json.RawMessage(`{"id": "42"}`),
		Risk: approvals.FailClosed(), Reason: `asked by rule "deletes"`, Approvers: 1, SessionGrantable: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(terminal.String()), "\n") {
		fmt.Println(strings.TrimRight(line, " "))
	}
	fmt.Println("vote:", v.Votes[0].ApproverID, v.Votes[0].Decision)
	// Output:
	// approval needed
	//   server:     orders
	//   tool:       delete_order
	//   arguments:  {"id":"42"}
	//   risk:       destroy, critical risk, blast radius global, reversibility none, side effects none, needs trust 5
	//   why:        asked by rule "deletes"
	//   approvers:  1 needed
	// Allow? [y] once  [s] for this session  [n] deny:
	// vote: operator deny
}

// What the model reads when an approver declines.
func ExampleModelMessage() {
	fmt.Println(approvals.ModelMessage(approvals.OutcomeRejected, approvals.ReasonDeclined, "use the staging database\x1b[0m"))
	// Output:
	// The tool call was not executed: an approver declined it. Approver note: "use the staging database[0m". Do not retry the same call; continue without it or ask the user how to proceed.
}
