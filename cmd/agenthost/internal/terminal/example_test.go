package terminal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
)

// A terminal approver: the question and the answer.
func ExamplePrompt() {
	var out strings.Builder // os.Stdout in a real CLI
	prompt := terminal.NewPrompt(strings.NewReader("n\n"), &out, "operator")
	defer prompt.Close()
	v, err := prompt.Approve(context.Background(), &approvals.Request{
		Server: "orders", Tool: "delete_order", Arguments: json.RawMessage(`{"id": "42"}`),
		Risk: risk.FailClosed(), Reason: `asked by rule "deletes"`, Approvers: 1, SessionGrantable: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
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
