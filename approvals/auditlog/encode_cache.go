package auditlog

import (
	"slices"
	"sync"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Most of a record's encoding is its tool's: the server, tool, definition
// hash and exposed name, then (after the call's arguments) the secure
// parameters' names and the risk, sixteen short fields. A host's tools are
// few, and a tool's calls carry the same values call after call, the
// decision and the result record alike. A line sink keeps the encodings of
// the tools it wrote last (toolCache, a slot a tool name) with the values
// they were encoded from, and writes those bytes again for a record whose
// values are equal in every field they encode (values, not where they
// are, so a value changed in place is encoded again). The line is the
// same bytes either way (TestToolFromCacheIsTheFullEncoding,
// FuzzToolFromCache).

// toolCache holds the encodings of recent tools, a slot per tool name (by
// hash; a slot is taken over by the next tool that misses it).
type toolCache struct {
	slots [8]toolSlot
}

// toolSlot is one tool's two encoded runs. A slot in use by another
// encoding is passed over: that record is encoded in full.
type toolSlot struct {
	mu sync.Mutex
	// names: ,"server":…,"exposedName":… (appendNames); nil: none yet.
	server, tool, toolDefHash, exposedName string
	names                                  []byte
	// tail: ,"secureParams":[…],"risk":… (appendTail); nil: none yet.
	secureParams []string
	hasRisk      bool
	risk         risk.Effective
	tail         []byte
}

// appendTool appends r's fields from the server to the risk (appendTool
// without a cache), the tool's two runs from c's slot for r's tool when
// they are r's, else encoded and kept there.
func (c *toolCache) appendTool(b []byte, r *Record) []byte {
	if c == nil {
		return r.appendTool(b)
	}
	s := &c.slots[nameSlot(r.Tool, len(c.slots))]
	if !s.mu.TryLock() {
		return r.appendTool(b)
	}
	defer s.mu.Unlock()
	if s.names != nil && s.sameNames(r) {
		b = append(b, s.names...)
	} else {
		start := len(b)
		b = r.appendNames(b)
		s.server, s.tool, s.toolDefHash, s.exposedName = r.Server, r.Tool, r.ToolDefHash, r.ExposedName
		s.names = append(s.names[:0], b[start:]...)
	}
	b = r.appendArguments(b)
	if s.tail != nil && s.sameTail(r) {
		return append(b, s.tail...)
	}
	start := len(b)
	b = r.appendTail(b)
	s.secureParams, s.hasRisk, s.risk = slices.Clone(r.SecureParams), r.Risk != nil, risk.Effective{}
	if e := r.Risk; e != nil {
		s.risk = risk.Effective{Category: e.Category, RiskLevel: e.RiskLevel, BlastRadius: e.BlastRadius, Reversibility: e.Reversibility,
			SideEffects: slices.Clone(e.SideEffects), ApprovalRecommendation: e.ApprovalRecommendation, MinTrustLevel: e.MinTrustLevel,
			Source: e.Source, Unclassified: e.Unclassified, ResultLabels: slices.Clone(e.ResultLabels)}
	}
	s.tail = append(s.tail[:0], b[start:]...)
	return b
}

func (s *toolSlot) sameNames(r *Record) bool {
	return r.Server == s.server && r.Tool == s.tool && r.ToolDefHash == s.toolDefHash && r.ExposedName == s.exposedName
}

func (s *toolSlot) sameTail(r *Record) bool {
	return slices.Equal(r.SecureParams, s.secureParams) && (r.Risk != nil) == s.hasRisk &&
		(r.Risk == nil || sameRiskEncoding(r.Risk, &s.risk))
}

// appendTool, appendNames, appendArguments and appendTail write a
// record's fields from the server to the risk.
func (r *Record) appendTool(b []byte) []byte {
	return r.appendTail(r.appendArguments(r.appendNames(b)))
}

func (r *Record) appendNames(b []byte) []byte {
	b = norm.AppendField(b, "server", r.Server)
	b = norm.AppendField(b, "tool", r.Tool)
	b = norm.AppendField(b, "toolDefHash", r.ToolDefHash)
	return norm.AppendField(b, "exposedName", r.ExposedName)
}

func (r *Record) appendArguments(b []byte) []byte {
	b = append(b, `,"arguments":`...)
	return append(b, r.argsCheck.JSONOrString(r.Arguments)...)
}

func (r *Record) appendTail(b []byte) []byte {
	b = append(b, `,"secureParams":`...)
	b = norm.AppendStrings(b, r.SecureParams)
	b = append(b, `,"risk":`...)
	if r.Risk == nil {
		return append(b, "null"...)
	}
	return r.Risk.AppendJSON(b)
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
