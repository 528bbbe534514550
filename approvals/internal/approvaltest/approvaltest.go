// Package approvaltest owns the fixtures the tests of the approvals
// packages above rules share (the gate's, policyinit's): a policy from a
// configuration, the configuration reference's example, compact risk
// metadata and tool input schemas. Only tests import it.
package approvaltest

import (
	"encoding/json"
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

// Eff is catalogue-sourced effective metadata with the given fields.
func Eff(cat risk.Category, level risk.RiskLevel, blast risk.BlastRadius, approval risk.ApprovalRecommendation, trust int, side ...string) risk.Effective {
	return risk.Effective{Category: cat, RiskLevel: level, BlastRadius: blast, Reversibility: risk.ReversibleManual,
		SideEffects: side, ApprovalRecommendation: approval, MinTrustLevel: trust, Source: risk.AllSources(risk.SourceCatalogue)}
}

// Fields is the comparable part of Effective, for compact tables.
type Fields struct {
	Category    risk.Category
	Risk        risk.RiskLevel
	Blast       risk.BlastRadius
	Rev         risk.Reversibility
	SideEffects []string
	Approval    risk.ApprovalRecommendation
	Trust       int
	Source      risk.Sources
}

// FieldsOf returns the comparable part of e.
func FieldsOf(e risk.Effective) Fields {
	return Fields{e.Category, e.RiskLevel, e.BlastRadius, e.Reversibility, e.SideEffects, e.ApprovalRecommendation, e.MinTrustLevel, e.Source}
}

// Schema is an object input schema with string properties props.
func Schema(props ...string) json.RawMessage {
	m := map[string]any{}
	for _, p := range props {
		m[p] = map[string]string{"type": "string"}
	}
	b, _ := json.Marshal(map[string]any{"type": "object", "properties": m})
	return b
}
