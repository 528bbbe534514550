package risk

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// normalRisk is a risk as the policy's Effective hands it over: normal.
func normalRisk() Effective {
	return Effective{
		Category:               CategoryMutate,
		RiskLevel:              RiskMedium,
		BlastRadius:            BlastGlobal,
		Reversibility:          ReversibleManual,
		SideEffects:            []string{"external_notification", "writes"},
		ApprovalRecommendation: ApprovalSingle,
		MinTrustLevel:          2,
		Source:                 AllSources(SourceDeclared),
		ResultLabels:           []string{"sensitive"},
		Hints:                  []string{"hint"},
		Notes:                  []string{"a note"},
	}
}

func TestNormalizeFastPath(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Effective)
		normal bool
	}{
		{"normal", func(*Effective) {}, true},
		{"no side effects", func(e *Effective) { e.SideEffects = []string{} }, true},
		{"nil side effects", func(e *Effective) { e.SideEffects = nil }, false},
		{"unknown category", func(e *Effective) { e.Category = "bogus" }, false},
		{"empty risk level", func(e *Effective) { e.RiskLevel = "" }, false},
		{"unknown blast radius", func(e *Effective) { e.BlastRadius = "wide" }, false},
		{"unknown reversibility", func(e *Effective) { e.Reversibility = "maybe" }, false},
		{"unknown approval", func(e *Effective) { e.ApprovalRecommendation = "some" }, false},
		{"trust 0", func(e *Effective) { e.MinTrustLevel = 0 }, false},
		{"trust 6", func(e *Effective) { e.MinTrustLevel = 6 }, false},
		{"unknown source", func(e *Effective) { e.Source.MinTrustLevel = "guess" }, false},
		{"empty source", func(e *Effective) { e.Source.SideEffects = "" }, false},
		{"unsorted side effects", func(e *Effective) { e.SideEffects = []string{"writes", "external_notification"} }, false},
		{"duplicate side effect", func(e *Effective) { e.SideEffects = []string{"writes", "writes"} }, false},
		{"upper-case side effect", func(e *Effective) { e.SideEffects = []string{"Writes"} }, false},
		{"spaced side effect", func(e *Effective) { e.SideEffects = []string{" writes"} }, false},
		{"control in side effect", func(e *Effective) { e.SideEffects = []string{"wri\x00tes"} }, false},
		{"empty side effect", func(e *Effective) { e.SideEffects = []string{""} }, false},
		{"long side effect", func(e *Effective) { e.SideEffects = []string{strings.Repeat("é", maxSideEffectLen+1)} }, false},
		{"side effect at the length bound", func(e *Effective) { e.SideEffects = []string{strings.Repeat("é", maxSideEffectLen)} }, true},
		{"too many side effects", func(e *Effective) {
			e.SideEffects = nil
			for i := range maxSideEffects + 1 {
				e.SideEffects = append(e.SideEffects, string(rune('a'+i/26))+string(rune('a'+i%26)))
			}
		}, false},
		{"destroy below high", func(e *Effective) { e.Category, e.RiskLevel = CategoryDestroy, RiskMedium }, false},
		{"destroy at high", func(e *Effective) { e.Category, e.RiskLevel = CategoryDestroy, RiskHigh }, true},
		{"delete below medium", func(e *Effective) { e.Category, e.RiskLevel = CategoryDelete, RiskLow }, false},
		{"exfiltration below high", func(e *Effective) { e.SideEffects = []string{"data_exfiltration"} }, false},
		{"privilege change at critical", func(e *Effective) {
			e.SideEffects, e.RiskLevel = []string{"privilege_change"}, RiskCritical
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := normalRisk()
			tt.edit(&e)
			if got := e.isNormal(); got != tt.normal {
				t.Fatalf("isNormal = %v, want %v", got, tt.normal)
			}
			if diff := cmp.Diff(e.normalize(), e.Normalize()); diff != "" {
				t.Fatalf("Normalize differs from the full path (-full +got):\n%s", diff)
			}
			if n := e.normalize(); !n.isNormal() {
				t.Fatalf("a normalised risk is not normal: %+v", n)
			}
		})
	}
}

// The fast path shares the lists of a normal risk; the full path copies.
func TestNormalizeSharesOnlyWhenNormal(t *testing.T) {
	e := normalRisk()
	if n := e.Normalize(); &n.SideEffects[0] != &e.SideEffects[0] {
		t.Fatal("a normal risk's side effects were copied")
	}
	if n := testing.AllocsPerRun(100, func() { sinkRisk = e.Normalize() }); n != 0 {
		t.Errorf("Normalize of a normal risk allocates %v times", n)
	}
	e.Category = "bogus"
	if n := e.Normalize(); &n.Notes[0] == &e.Notes[0] {
		t.Fatal("the full path shares the notes")
	}
}

var sinkRisk Effective // keeps Normalize's result on the heap

func FuzzNormalizeFastPath(f *testing.F) {
	f.Add("mutate", "medium", "global", "manual", "single", 2, "declared", "external_notification,writes", "a note")
	f.Add("destroy", "low", "single", "none", "multi", 5, "default", "", "")
	f.Add("read", "high", "bogus", "auto", "none", 0, "inferred", "data_exfiltration", "")
	f.Add("delete", "low", "global", "none", "single", 3, "catalogue", "B, a,a", "x")
	f.Fuzz(func(t *testing.T, cat, lvl, blast, rev, appr string, trust int, src, sides, notes string) {
		e := Effective{
			Category:               Category(cat),
			RiskLevel:              RiskLevel(lvl),
			BlastRadius:            BlastRadius(blast),
			Reversibility:          Reversibility(rev),
			ApprovalRecommendation: ApprovalRecommendation(appr),
			MinTrustLevel:          trust,
			Source:                 AllSources(Source(src)),
		}
		if sides != "-" {
			e.SideEffects = strings.Split(sides, ",")
			if sides == "" {
				e.SideEffects = []string{}
			}
		}
		if notes != "" {
			e.Notes = strings.Split(notes, ",")
		}
		before := e.Clone()
		full, got := e.normalize(), e.Normalize()
		if diff := cmp.Diff(full, got); diff != "" {
			t.Fatalf("Normalize differs from the full path (-full +got):\n%s", diff)
		}
		if diff := cmp.Diff(before, e); diff != "" {
			t.Fatalf("Normalize changed its input:\n%s", diff)
		}
		// A normalised risk is where the fast path answers.
		if diff := cmp.Diff(full.normalize(), full.Normalize()); diff != "" {
			t.Fatalf("Normalize of a normalised risk differs from the full path (-full +got):\n%s", diff)
		}
	})
}
