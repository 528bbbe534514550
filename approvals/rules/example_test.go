package rules_test

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// An untrusted server declares its drop_database tool low risk; inference
// keeps it destroy/critical, and the rules ask two people.
func ExamplePolicy_Decide() {
	policy, err := rules.NewPolicy(rules.Config{
		Unclassified: rules.UnclassifiedInfer,
		Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read", "observe"}}, Decide: "allow"},
			{ID: "deletes", When: rules.Match{Category: []string{"delete", "destroy"}}, Decide: "ask", Approvers: 2},
			{ID: "wide", When: rules.Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny",
				Message: "organization-wide changes are not allowed from agents"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	tool := risk.ToolInfo{
		Name:        "drop_database",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"cluster":{"type":"string"}}}`),
		Annotations: json.RawMessage(`{"riskLevel":"low","category":"read"}`),
	}
	risk := policy.Effective("db", false, tool)
	fmt.Println("effective:", risk.Category, risk.RiskLevel, risk.BlastRadius, "from", risk.Source.RiskLevel)

	d := policy.Decide(risk, rules.Call{Server: "db", Tool: tool.Name, Args: json.RawMessage(`{"name":"shop"}`), TrustLevel: 5})
	fmt.Println("decision:", d.Action, d.Approvers, "approvers, rules", d.Rules)

	d = policy.Decide(risk, rules.Call{Server: "db", Tool: tool.Name, Args: json.RawMessage(`{"name":"shop","cluster":"*"}`), TrustLevel: 5})
	fmt.Println("decision:", d.Action, d.Outcome, d.Rules, "-", strings.Join(d.Escalations, "; "))

	d = policy.Decide(risk, rules.Call{Server: "db", Tool: tool.Name, TrustLevel: 2})
	fmt.Println("decision:", d.Action, d.Outcome)
	// Output:
	// effective: destroy critical cluster from inferred
	// decision: ask 2 approvers, rules [deletes]
	// decision: deny denied_by_rule [deletes wide] - argument "cluster" is "*": blastRadius cluster -> organization
	// decision: deny trust_denied
}
