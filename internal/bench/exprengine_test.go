package bench

import (
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/approvals/rules/celexpr"
)

// The tests' configurations have rule expressions: CEL runs them, as in
// the full agenthost build.
func init() { rules.UseExprEngine(celexpr.Engine{}) }
