// Package risktest owns the risk-metadata fixtures the tests of the
// approvals packages above risk share (rules', the gate's, policyinit's):
// compact effective metadata and tool input schemas. Only tests import it.
package risktest

import (
	"encoding/json"

	"github.com/agenthost/agenthost/approvals/risk"
)

// Eff is catalogue-sourced effective metadata with the given fields.
func Eff(cat risk.Category, level risk.RiskLevel, blast risk.BlastRadius, approval risk.ApprovalRecommendation, trust int, side ...string) risk.Effective {
	return risk.Effective{Category: cat, RiskLevel: level, BlastRadius: blast, Reversibility: risk.ReversibleManual,
		SideEffects: side, ApprovalRecommendation: approval, MinTrustLevel: trust, Source: risk.AllSources(risk.SourceCatalogue)}
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
