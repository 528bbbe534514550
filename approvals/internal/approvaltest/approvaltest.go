// Package approvaltest owns the policy fixtures the tests of the approvals
// packages above rules share (the gate's, policyinit's): a policy from a
// configuration and the configuration reference's example. Only tests
// import it; the risk fixtures are risktest's.
package approvaltest

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// MustPolicy builds the policy of cfg or fails the test.
func MustPolicy(t testing.TB, cfg rules.Config) *rules.Policy {
	t.Helper()
	p, err := rules.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// ContractConfig is the approvals example of the configuration reference
// (docs/config.md).
func ContractConfig() rules.Config {
	s := func(v string) *string { return &v }
	return rules.Config{
		Unclassified: rules.UnclassifiedStrict,
		Catalogue: []rules.CatalogueEntry{{Server: "orders", Tool: "get_*", Metadata: risk.RawMetadata{
			Category: s("read"), RiskLevel: s("low"), BlastRadius: s("item"), MinTrustLevel: 1,
			ApprovalRecommendation: s("none"), Reversibility: s("auto")}}},
		Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read", "observe"}}, Decide: "allow"},
			{ID: "writes", When: rules.Match{Category: []string{"mutate"}}, Decide: "ask", Approvers: 1},
			{ID: "deletes", When: rules.Match{Category: []string{"delete", "destroy"}}, Decide: "ask", Approvers: 2, Timeout: 10 * time.Minute},
			{ID: "wide", When: rules.Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny",
				Message: "organization-wide changes are not allowed from agents"},
		},
		NoMatch: "ask",
		Timeout: 5 * time.Minute,
	}
}
