package risk

import (
	"strconv"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

func (e *Effective) AppendJSON(b []byte) []byte {
	b = append(b, `{"category":`...)
	b = norm.AppendString(b, string(e.Category))
	b = norm.AppendField(b, "riskLevel", string(e.RiskLevel))
	b = norm.AppendField(b, "blastRadius", string(e.BlastRadius))
	b = norm.AppendField(b, "reversibility", string(e.Reversibility))
	b = append(b, `,"sideEffects":`...)
	b = norm.AppendStrings(b, e.SideEffects)
	b = norm.AppendField(b, "approvalRecommendation", string(e.ApprovalRecommendation))
	b = append(b, `,"minTrustLevel":`...)
	b = strconv.AppendInt(b, int64(e.MinTrustLevel), 10)
	s := e.Source
	b = append(b, `,"source":{"category":`...)
	b = norm.AppendString(b, string(s.Category))
	b = norm.AppendField(b, "riskLevel", string(s.RiskLevel))
	b = norm.AppendField(b, "blastRadius", string(s.BlastRadius))
	b = norm.AppendField(b, "reversibility", string(s.Reversibility))
	b = norm.AppendField(b, "sideEffects", string(s.SideEffects))
	b = norm.AppendField(b, "approvalRecommendation", string(s.ApprovalRecommendation))
	b = norm.AppendField(b, "minTrustLevel", string(s.MinTrustLevel))
	b = append(b, '}')
	if e.Unclassified {
		b = append(b, `,"unclassified":true`...)
	}
	if len(e.ResultLabels) > 0 {
		b = append(b, `,"resultLabels":`...)
		b = norm.AppendStrings(b, e.ResultLabels)
	}
	return append(b, '}')
}
