package auditlog

import (
	"slices"
	"sync"

	"github.com/agenthost/agenthost/approvals/risk"
)

// A record's risk is a third of its encoding (sixteen short fields), and
// the risks of a host's calls are few: a tool's calls have the same one,
// call after call, the decision and the result record alike. A line sink
// keeps the encoding of the risks it wrote last (riskCache, a slot a tool
// name) with the value it was encoded from, and writes those bytes again
// for a record whose risk is equal in every field the encoding writes
// (sameRiskEncoding: values, not where they are, so a risk changed in
// place is encoded again). The line is the same bytes either way
// (TestRiskFromCacheIsTheFullEncoding, FuzzRiskFromCache).

// riskCache holds recently encoded risks, a slot per tool (by hash; a slot
// is taken over by the next risk that misses it).
type riskCache struct {
	slots [8]riskSlot
}

// riskSlot is one risk and its encoding. A slot in use by another
// encoding is passed over: that risk is encoded in full.
type riskSlot struct {
	mu      sync.Mutex
	risk    risk.Effective
	encoded []byte // nil: empty slot
}

// appendRisk appends e's encoding (risk.Effective.AppendJSON), from c's
// slot for tool when it holds an equal risk.
func (c *riskCache) appendRisk(b []byte, tool string, e *risk.Effective) []byte {
	if c == nil {
		return e.AppendJSON(b)
	}
	s := &c.slots[nameSlot(tool, len(c.slots))]
	if !s.mu.TryLock() {
		return e.AppendJSON(b)
	}
	defer s.mu.Unlock()
	if s.encoded != nil && sameRiskEncoding(e, &s.risk) {
		return append(b, s.encoded...)
	}
	start := len(b)
	b = e.AppendJSON(b)
	s.risk = risk.Effective{Category: e.Category, RiskLevel: e.RiskLevel, BlastRadius: e.BlastRadius, Reversibility: e.Reversibility,
		SideEffects: slices.Clone(e.SideEffects), ApprovalRecommendation: e.ApprovalRecommendation, MinTrustLevel: e.MinTrustLevel,
		Source: e.Source, Unclassified: e.Unclassified, ResultLabels: slices.Clone(e.ResultLabels)}
	s.encoded = append(s.encoded[:0], b[start:]...)
	return b
}

// nameSlot is the slot of a name: FNV-1a of its last 16 bytes.
func nameSlot(name string, n int) int {
	h := uint32(2166136261)
	for i := max(0, len(name)-16); i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return int(h % uint32(n))
}

// sameRiskEncoding reports that a and b encode the same
// (risk.Effective.AppendJSON): every field it writes equal.
func sameRiskEncoding(a, b *risk.Effective) bool {
	return a.Category == b.Category && a.RiskLevel == b.RiskLevel && a.BlastRadius == b.BlastRadius &&
		a.Reversibility == b.Reversibility && slices.Equal(a.SideEffects, b.SideEffects) &&
		a.ApprovalRecommendation == b.ApprovalRecommendation && a.MinTrustLevel == b.MinTrustLevel &&
		a.Source == b.Source && a.Unclassified == b.Unclassified && slices.Equal(a.ResultLabels, b.ResultLabels)
}
