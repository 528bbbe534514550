package risk

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/internal/norm"
)

// Effective is the metadata the policy decides on: every SEP-2793 field
// normalised, with where each value came from. It marshals to exactly the
// "risk" object of `tools --json` and of audit records.
type Effective struct {
	Category               Category               `json:"category"`
	RiskLevel              RiskLevel              `json:"riskLevel"`
	BlastRadius            BlastRadius            `json:"blastRadius"`
	Reversibility          Reversibility          `json:"reversibility"`
	SideEffects            []string               `json:"sideEffects"`
	ApprovalRecommendation ApprovalRecommendation `json:"approvalRecommendation"`
	MinTrustLevel          int                    `json:"minTrustLevel"`
	Source                 Sources                `json:"source"`
	// Unclassified marks a tool with a field nobody classified (source
	// "default") under approvals.unclassified ask or infer: it is offered,
	// and every call to it asks one person (see UnclassifiedAsk).
	Unclassified bool `json:"unclassified,omitempty"`
	// ResultLabels are the labels (LabelSensitive, LabelUntrusted) the
	// tool's action-metadata returnMetadata gives every result of it.
	ResultLabels []string `json:"resultLabels,omitempty"`
	// Hints are the server's own declarations of an unclassified tool, for
	// approvers: shown as untrusted evidence, never acted on.
	Hints []string `json:"-"`

	// InferenceVersion names the heuristic (e.g. "infer/v1") that produced
	// the fields whose source is "inferred"; empty when none is.
	InferenceVersion string `json:"-"`
	// Notes explain adjustments for `policy explain`: untrusted raises,
	// consistency floors, hints used, why inference did not apply.
	Notes []string `json:"-"`
}

// Sources holds the provenance of each field of [Effective].
type Sources struct {
	Category               Source `json:"category"`
	RiskLevel              Source `json:"riskLevel"`
	BlastRadius            Source `json:"blastRadius"`
	Reversibility          Source `json:"reversibility"`
	SideEffects            Source `json:"sideEffects"`
	ApprovalRecommendation Source `json:"approvalRecommendation"`
	MinTrustLevel          Source `json:"minTrustLevel"`
}

func AllSources(s Source) Sources {
	return Sources{s, s, s, s, s, s, s}
}

// FailClosed is SEP-2793's most restrictive bucket, given to a tool nobody
// classified: riskLevel critical, category destroy, blastRadius global,
// reversibility none, approvalRecommendation multi, minTrustLevel 5, no
// known side effects, every source "default".
func FailClosed() Effective {
	return Effective{
		Category:               CategoryDestroy,
		RiskLevel:              RiskCritical,
		BlastRadius:            BlastGlobal,
		Reversibility:          ReversibleNone,
		SideEffects:            []string{},
		ApprovalRecommendation: ApprovalMulti,
		MinTrustLevel:          MaxTrust,
		Source:                 AllSources(SourceDefault),
	}
}

type effectiveJSON Effective

// MarshalJSON writes the risk object; sideEffects is [] rather than null.
func (e Effective) MarshalJSON() ([]byte, error) {
	if e.SideEffects == nil {
		e.SideEffects = []string{}
	}
	return json.Marshal(effectiveJSON(e))
}

// UnmarshalJSON reads a risk object as written by MarshalJSON.
func (e *Effective) UnmarshalJSON(b []byte) error {
	var v effectiveJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*e = Effective(v)
	return nil
}

// Clone returns a copy that shares no slices with e.
func (e Effective) Clone() Effective {
	e.SideEffects = cloneStrings(e.SideEffects)
	e.Notes = cloneStrings(e.Notes)
	e.Hints = cloneStrings(e.Hints)
	e.ResultLabels = cloneStrings(e.ResultLabels)
	return e
}

// cloneStrings copies s; an empty s becomes a zero-capacity slice, so
// nothing is allocated and nothing shared.
func cloneStrings(s []string) []string {
	if len(s) == 0 {
		return s[:0:0]
	}
	return slices.Clone(s)
}

// Normalize returns e with unknown or empty enum values replaced by the
// field's most restrictive value, minTrustLevel outside 1..5 set to 5, side
// effects normalised, missing sources marked "default", and the consistency
// floors applied. Normalising never lowers a value.
//
// A risk that is already normal (as the policy's Effective gives it, once
// per definition) comes back as it is, sharing its lists with e; any other
// is normalised on a copy that shares none. Either way e is not changed:
// callers read the lists of the result and never write them.
func (e Effective) Normalize() Effective {
	if e.isNormal() {
		return e
	}
	return e.normalize()
}

// normalize is Normalize's full path, on a copy of e that shares no lists.
func (e Effective) normalize() Effective {
	e = e.Clone()
	e.Category = norm.NormEnum(CategoryOrder, e.Category)
	e.RiskLevel = norm.NormEnum(RiskOrder, e.RiskLevel)
	e.BlastRadius = norm.NormEnum(BlastOrder, e.BlastRadius)
	e.Reversibility = norm.NormEnum(ReversibilityOrder, e.Reversibility)
	e.ApprovalRecommendation = norm.NormEnum(ApprovalOrder, e.ApprovalRecommendation)
	e.MinTrustLevel, _ = NormalizeTrust(e.MinTrustLevel)
	e.SideEffects = NormalizeSideEffects(e.SideEffects)
	for _, s := range e.Source.all() {
		if !s.known() {
			*s = SourceDefault
		}
	}
	e.Notes = append(e.Notes, ApplyFloors(&e)...)
	return e
}

// isNormal reports whether Normalize would return e unchanged: every enum
// known, minTrustLevel in 1..5, every source known, the side effects
// already normalised (a non-nil, strictly ascending list of at most 32
// normalised strings) and no floor to apply.
func (e Effective) isNormal() bool {
	if !norm.Known(CategoryOrder, e.Category) || !norm.Known(RiskOrder, e.RiskLevel) ||
		!norm.Known(BlastOrder, e.BlastRadius) || !norm.Known(ReversibilityOrder, e.Reversibility) ||
		!norm.Known(ApprovalOrder, e.ApprovalRecommendation) ||
		e.MinTrustLevel < MinTrust || e.MinTrustLevel > MaxTrust {
		return false
	}
	for _, s := range e.Source.all() {
		if !s.known() {
			return false
		}
	}
	if e.SideEffects == nil || len(e.SideEffects) > maxSideEffects {
		return false
	}
	for i, s := range e.SideEffects {
		if !normalSideEffect(s) || (i > 0 && e.SideEffects[i-1] >= s) {
			return false
		}
	}
	return floorsHold(&e)
}

// normalSideEffect reports whether NormalizeSideEffects keeps s as it is.
func normalSideEffect(s string) bool { return s != "" && normSideEffect(s) == s }

// floorsHold reports whether ApplyFloors would raise nothing.
func floorsHold(e *Effective) bool {
	hold := true
	eachFloor(e, func(min RiskLevel, _, _ string) {
		if e.RiskLevel.Rank() < min.Rank() {
			hold = false
		}
	})
	return hold
}

// all is the seven sources, to read or set.
func (s *Sources) all() [7]*Source {
	return [...]*Source{&s.Category, &s.RiskLevel, &s.BlastRadius, &s.Reversibility,
		&s.SideEffects, &s.ApprovalRecommendation, &s.MinTrustLevel}
}

// known reports whether s is one of the sources Normalize keeps.
func (s *Source) known() bool {
	switch *s {
	case SourceCatalogue, SourceDeclared, SourceActionMetadata, SourceInferred, SourceDefault:
		return true
	}
	return false
}

// ApplyFloors enforces the consistency floors on riskLevel: destroying is at
// least high, deleting at least medium, and data exfiltration or privilege
// change side effects at least high. Floors apply whatever the source, a
// catalogue entry included: they only ever raise.
func ApplyFloors(e *Effective) []string {
	var notes []string
	eachFloor(e, func(min RiskLevel, why, what string) {
		if e.RiskLevel.Rank() < min.Rank() {
			notes = append(notes, fmt.Sprintf("riskLevel raised from %s to %s: %s %s", e.RiskLevel, min, why, what))
			e.RiskLevel = min
		}
	})
	return notes
}

// eachFloor calls floor with each consistency floor that applies to e, in
// order: the least riskLevel, and why (the field and its value). It is the
// floors' one statement, for ApplyFloors and floorsHold.
func eachFloor(e *Effective, floor func(min RiskLevel, why, what string)) {
	switch e.Category {
	case CategoryDestroy:
		floor(RiskHigh, "category", "destroy")
	case CategoryDelete:
		floor(RiskMedium, "category", "delete")
	}
	for _, s := range e.SideEffects {
		if s == "data_exfiltration" || s == "privilege_change" {
			floor(RiskHigh, "side effect", s)
		}
	}
}

// ReversibilityFor is the reversibility implied by a category when nothing
// says otherwise: nothing to undo for non-mutating tools, a separate action
// for changes, nothing for deletions.
func ReversibilityFor(c Category) Reversibility {
	switch c {
	case CategoryRead, CategoryObserve, CategoryUtility:
		return ReversibleAuto
	case CategoryMutate:
		return ReversibleManual
	}
	return ReversibleNone
}

// ApprovalFor is the approval recommendation implied by a risk level.
func ApprovalFor(r RiskLevel) ApprovalRecommendation {
	switch r {
	case RiskLow:
		return ApprovalNone
	case RiskMedium, RiskHigh:
		return ApprovalSingle
	}
	return ApprovalMulti
}

// TrustFor is the minimum trust level implied by a risk level; critical
// stops at 4 so that only an unclassified tool needs the top of the ladder.
func TrustFor(r RiskLevel) int {
	switch r {
	case RiskLow:
		return 1
	case RiskMedium:
		return 2
	case RiskHigh:
		return 3
	}
	return 4
}

// defaultedUnclassified reports whether a field's value is the fail-closed
// default that, for an unclassified tool, must not hide it, deny it by
// trust level or raise its quorum.
func (e Effective) defaultedUnclassified(src Source) bool {
	return e.Unclassified && src == SourceDefault
}

// TrustFloor is the minTrustLevel that gates a session: the effective one,
// except that an unclassified tool's default (5) gates nobody, since every
// call to it asks a person.
func (e Effective) TrustFloor() int {
	if e.defaultedUnclassified(e.Source.MinTrustLevel) {
		return MinTrust
	}
	return e.MinTrustLevel
}

// QuorumFloor is the least number of distinct approvers an ask needs: the
// approvalRecommendation's, except that an unclassified tool's default
// (multi) does not raise it, and an unclassified tool needs one at least.
func (e Effective) QuorumFloor() int {
	switch {
	case e.defaultedUnclassified(e.Source.ApprovalRecommendation):
		return 1
	case e.Unclassified:
		return max(1, e.ApprovalRecommendation.minApprovers())
	}
	return e.ApprovalRecommendation.minApprovers()
}

// FromSource lists the fields whose value came from src, as "name value"
// (sideEffects as a bracketed list), in the risk object's order.
func (e Effective) FromSource(src Source) []string {
	var out []string
	add := func(name string, s Source, v string) {
		if s == src {
			out = append(out, name+" "+v)
		}
	}
	s := e.Source
	add("category", s.Category, string(e.Category))
	add("riskLevel", s.RiskLevel, string(e.RiskLevel))
	add("blastRadius", s.BlastRadius, string(e.BlastRadius))
	add("reversibility", s.Reversibility, string(e.Reversibility))
	add("sideEffects", s.SideEffects, "["+strings.Join(e.SideEffects, ", ")+"]")
	add("approvalRecommendation", s.ApprovalRecommendation, string(e.ApprovalRecommendation))
	add("minTrustLevel", s.MinTrustLevel, fmt.Sprint(e.MinTrustLevel))
	return out
}
