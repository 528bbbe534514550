package secureparams

import (
	"slices"

	"github.com/agenthost/agenthost/host/secureparams/internal/expansion"
	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
)

// singlePass lets parseValidTool decide a clean tool from the single token
// pass (onepass.Scan) without decoding its schemas. Only FuzzSinglePass
// and the benchmarks turn it off, to compare with the full analysis.
var singlePass = true

// passLimits make the pass decline every schema the full analysis could
// find at or beyond a limit: half the subschema depth, since a $ref adds
// its target's depth to the holder's, and half the node budget, which also
// bounds the walker's visits.
var passLimits = onepass.Limits{
	MaxJSONDepth:     maxJSONDepth,
	MaxSchemaDepth:   MaxSchemaDepth / 2,
	MaxNodes:         MaxSchemaNodes / 2,
	MaxArgumentDepth: MaxArgumentDepth,
	MaxSchemaText:    expansion.MaxRefOnlySchema,
	// A secureInputSchema the memo holds passed the full analysis's steps
	// that read it alone, its duplicate-key scan among them: the pass need
	// not read its tokens again.
	CheckedMember: "secureInputSchema",
	Checked:       func(value []byte) bool { return secureMemo.get(value) != nil },
}

// cleanByPass finishes t from the pass's facts when they prove the full
// analysis would find no problem and no warning of its own: an inputSchema
// the pass answered for and either no secureInputSchema or one the memo
// holds (secureHalf), whose overlap and name-variant checks against the
// pass's names come out empty. It sets what analyze would set and
// reports true; otherwise it changes nothing and the full analysis runs.
func cleanByPass(t *Tool, facts *onepass.Facts) bool {
	if !facts.HasInput || t.InputSchemaDefaulted {
		return false
	}
	half := t.secureHalf
	if t.HasSecureSchema {
		if half == nil || facts.InputNodes+half.nodes > MaxSchemaNodes {
			return false
		}
		if half.overlapsOrVaries(facts.Names) {
			return false
		}
		half.apply(t)
		t.SecureRequired = slices.Clone(half.required)
		t.Warnings = append(t.Warnings, half.headerWarnings...)
	} else {
		t.SecureParams = []string{} // as extractSecureBasics leaves it
	}
	t.secureHalf = nil
	t.inputCost = facts.Cost
	t.docsDecoded = true
	return true
}

// overlapsOrVaries reports whether checkOverlap or nameVariantWarnings
// would find anything between the remembered secure half and inputSchema's
// names, as the pass collected them (the pass declines patternProperties,
// so inputSchema has no patterns): a name the secure schema declares, one
// a secure pattern admits, or one that differs from a secure name only in
// case or separators. The secure names' set and guard targets were built
// once, with the half.
func (h *secureHalf) overlapsOrVaries(names []string) bool {
	for _, n := range names {
		if h.declared[n] {
			return true
		}
		for _, p := range h.patterns {
			if p.re.MatchString(n) {
				return true
			}
		}
		for i, s := range h.params {
			if n != s && h.targets[i].Matches(n) {
				return true
			}
		}
	}
	return false
}
