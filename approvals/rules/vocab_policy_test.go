package rules

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

func want[T comparable](t *testing.T, field string, got, wantV T, src, wantSrc risk.Source) {
	t.Helper()
	if got != wantV || src != wantSrc {
		t.Errorf("%s = %v from %s, want %v from %s", field, got, src, wantV, wantSrc)
	}
}

func hasNote(e risk.Effective, sub string) bool {
	return slices.ContainsFunc(e.Notes, func(n string) bool { return strings.Contains(n, sub) })
}

// A tool's action-metadata maps into the effective risk beside SEP-2793:
// from an untrusted server it can only raise, from a trusted one it stands
// in for SEP-2793 fields the server left out; each field says where it
// came from.
func TestActionMetadataEffective(t *testing.T) {
	am := func(obj string) string { return `{"` + risk.ActionMetadataKey + `":` + obj + `}` }
	tests := []struct {
		name        string
		trusted     bool
		annotations string
		meta        string
		check       func(t *testing.T, e risk.Effective)
	}{
		{name: "untrusted: irreversible raises an inferred read to high, reversibility none",
			annotations: am(`{"outcome":"irreversible"}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskHigh, e.Source.RiskLevel, risk.SourceActionMetadata)
				want(t, "reversibility", e.Reversibility, risk.ReversibleNone, e.Source.Reversibility, risk.SourceActionMetadata)
				want(t, "category", e.Category, risk.CategoryRead, e.Source.Category, risk.SourceInferred)
			}},
		{name: "untrusted: consequential in inputMetadata.outcomes (SDK shape) raises to medium",
			annotations: am(`{"inputMetadata":{"outcomes":["benign","consequential"]}}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskMedium, e.Source.RiskLevel, risk.SourceActionMetadata)
			}},
		{name: "untrusted: benign lowers nothing",
			annotations: am(`{"outcome":"benign","requiresReview":false}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskLow, e.Source.RiskLevel, risk.SourceInferred)
				want(t, "approvalRecommendation", e.ApprovalRecommendation, risk.ApprovalNone, e.Source.ApprovalRecommendation, risk.SourceInferred)
			}},
		{name: "untrusted: requiresReview raises approvalRecommendation to single",
			annotations: am(`{"requiresReview":true}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "approvalRecommendation", e.ApprovalRecommendation, risk.ApprovalSingle, e.Source.ApprovalRecommendation, risk.SourceActionMetadata)
			}},
		{name: "untrusted: requires_review as an outcome value",
			annotations: am(`{"outcomes":["requires_review"]}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "approvalRecommendation", e.ApprovalRecommendation, risk.ApprovalSingle, e.Source.ApprovalRecommendation, risk.SourceActionMetadata)
			}},
		{name: "untrusted: cannot lower a SEP-2793 declaration that raised",
			annotations: `{"riskLevel":"critical","` + risk.ActionMetadataKey + `":{"outcome":"consequential"}}`,
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskCritical, e.Source.RiskLevel, risk.SourceDeclared)
				if !hasNote(e, "action-metadata riskLevel medium ignored") {
					t.Errorf("notes %q do not say the lower value was ignored", e.Notes)
				}
			}},
		{name: "untrusted: sensitive inputs to a public destination are exfiltration (floored to high)",
			annotations: am(`{"inputMetadata":{"destination":"public","sensitivity":{"regulated":{"scopes":["HIPAA"]}}}}`),
			check: func(t *testing.T, e risk.Effective) {
				if !slices.Equal(e.SideEffects, []string{"data_exfiltration", "external_notification"}) || e.Source.SideEffects != risk.SourceActionMetadata {
					t.Errorf("sideEffects %v from %s", e.SideEffects, e.Source.SideEffects)
				}
				if e.RiskLevel != risk.RiskHigh {
					t.Errorf("riskLevel %s, want the data_exfiltration floor high", e.RiskLevel)
				}
			}},
		{name: "untrusted: an internal destination adds nothing",
			annotations: am(`{"inputMetadata":{"destination":"internal","sensitivity":"sensitive"}}`),
			check: func(t *testing.T, e risk.Effective) {
				if len(e.SideEffects) != 0 {
					t.Errorf("sideEffects %v", e.SideEffects)
				}
			}},
		{name: "in the tool's _meta (SDKs that cannot extend the annotations)",
			meta: am(`{"outcome":"irreversible","returnMetadata":{"source":"untrustedPublic","sensitivity":"pii"}}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskHigh, e.Source.RiskLevel, risk.SourceActionMetadata)
				if !slices.Equal(e.ResultLabels, []string{risk.LabelUntrusted, risk.LabelSensitive}) {
					t.Errorf("resultLabels %v", e.ResultLabels)
				}
			}},
		{name: "both places: neither takes away from the other",
			annotations: am(`{"outcome":"benign"}`), meta: am(`{"outcome":"irreversible"}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskHigh, e.Source.RiskLevel, risk.SourceActionMetadata)
			}},
		{name: "an unknown outcome is noted and maps to nothing",
			annotations: am(`{"outcome":"research execution"}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskLow, e.Source.RiskLevel, risk.SourceInferred)
				if !hasNote(e, `"researchexecution" is not a value`) {
					t.Errorf("notes %q", e.Notes)
				}
			}},
		{name: "not an object: noted, ignored",
			annotations: am(`"irreversible"`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskLow, e.Source.RiskLevel, risk.SourceInferred)
				if !hasNote(e, "is not an object") {
					t.Errorf("notes %q", e.Notes)
				}
			}},
		{name: "trusted: stands in for an absent SEP-2793 field",
			trusted: true, annotations: am(`{"outcome":"consequential"}`),
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskMedium, e.Source.RiskLevel, risk.SourceActionMetadata)
				want(t, "reversibility", e.Reversibility, risk.ReversibleManual, e.Source.Reversibility, risk.SourceActionMetadata)
			}},
		{name: "trusted: the SEP-2793 declaration wins",
			trusted: true, annotations: `{"riskLevel":"low","` + risk.ActionMetadataKey + `":{"outcome":"irreversible"}}`,
			check: func(t *testing.T, e risk.Effective) {
				want(t, "riskLevel", e.RiskLevel, risk.RiskLow, e.Source.RiskLevel, risk.SourceDeclared)
			}},
	}
	p, err := NewPolicy(Config{Unclassified: UnclassifiedInfer})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tool := risk.ToolInfo{Name: "get_report", Annotations: json.RawMessage(tt.annotations), Meta: json.RawMessage(tt.meta)}
			e := p.Effective("s", tt.trusted, tool)
			tt.check(t, e)
			if got, _ := json.Marshal(e); !json.Valid(got) {
				t.Fatalf("risk object %s", got)
			}
		})
	}
}

// Without the vocabulary's key the effective risk is exactly SEP-2793's.
func TestActionMetadataAbsentChangesNothing(t *testing.T) {
	p, _ := NewPolicy(Config{Unclassified: UnclassifiedInfer})
	for _, ann := range []string{``, `{"riskLevel":"low"}`, `{"readOnlyHint":true}`, `{"destructiveHint":true,"sideEffects":["cost"]}`} {
		for _, trusted := range []bool{true, false} {
			a := p.Effective("s", trusted, risk.ToolInfo{Name: "delete_x", Annotations: json.RawMessage(ann)})
			b := p.Effective("s", trusted, risk.ToolInfo{Name: "delete_x", Annotations: json.RawMessage(ann), Meta: json.RawMessage(`{"other":1}`)})
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) || !slices.Equal(a.Notes, b.Notes) {
				t.Errorf("%s trusted=%t: %s != %s", ann, trusted, ja, jb)
			}
		}
	}
}

// The memo of effective metadata keys on _meta too: two tools with the
// same annotations and different action-metadata in _meta differ.
func TestEffectiveMemoKeysOnMeta(t *testing.T) {
	p, _ := NewPolicy(Config{}) // ask: the memoised path
	plain := p.Effective("s", true, risk.ToolInfo{Name: "a", Annotations: json.RawMessage(`{"category":"read"}`)})
	marked := p.Effective("s", true, risk.ToolInfo{Name: "b", Annotations: json.RawMessage(`{"category":"read"}`),
		Meta: json.RawMessage(`{"` + risk.ActionMetadataKey + `":{"outcome":"irreversible"}}`)})
	if plain.RiskLevel == marked.RiskLevel || marked.Source.RiskLevel != risk.SourceActionMetadata {
		t.Errorf("plain %s (%s), marked %s (%s)", plain.RiskLevel, plain.Source.RiskLevel, marked.RiskLevel, marked.Source.RiskLevel)
	}
}

// Rule expressions read the labels of the session's earlier results: deny
// a fetch of an outside URL once an untrusted result is in the context.
func TestExprSessionResultLabels(t *testing.T) {
	p, err := NewPolicy(Config{Rules: []Rule{
		{ID: "allow-all", Decide: "allow"},
		{ID: "no-egress-after-untrusted", Decide: "deny",
			When: Match{Expr: `"untrusted" in session.resultLabels && urlHost(args.url) != "localhost"`}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e := risk.FailClosed()
	e.RiskLevel, e.Category, e.MinTrustLevel, e.ApprovalRecommendation = risk.RiskLow, risk.CategoryRead, 1, risk.ApprovalNone
	tests := []struct {
		name   string
		labels []string
		url    string
		want   Action
	}{
		{"no labels: outside URL allowed", nil, "https://example.com/x", ActionAllow},
		{"sensitive only: allowed", []string{risk.LabelSensitive}, "https://example.com/x", ActionAllow},
		{"after untrusted: outside URL denied", []string{risk.LabelSensitive, risk.LabelUntrusted}, "https://example.com/x", ActionDeny},
		{"after untrusted: localhost allowed", []string{risk.LabelUntrusted}, "http://localhost:8080/", ActionAllow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args, _ := json.Marshal(map[string]string{"url": tt.url})
			d := p.Decide(e, Call{Server: "web", Tool: "fetch", Args: args, TrustLevel: 3, ResultLabels: tt.labels})
			if d.Action != tt.want {
				t.Errorf("decision %s (%s), want %s", d.Action, d.Reason, tt.want)
			}
		})
	}
}

// FuzzParseActionMetadata: garbage never panics, lists stay bounded, and
// for an untrusted server the vocabulary only ever raises a field.
func FuzzParseActionMetadata(f *testing.F) {
	for _, s := range []string{`{}`, `{"outcome":"irreversible"}`, `{"inputMetadata":{"destination":["public",1],"sensitivity":{"regulated":{}}}}`,
		`{"returnMetadata":{"source":"untrustedPublic"}}`, `{"requiresReview":"x"}`, `[`, `null`, `{"outcomes":[[["a"]]]}`} {
		f.Add(s)
	}
	p, _ := NewPolicy(Config{Unclassified: UnclassifiedInfer})
	f.Fuzz(func(t *testing.T, obj string) {
		ann := json.RawMessage(`{"` + risk.ActionMetadataKey + `":` + obj + `}`)
		am := risk.ParseActionMetadata(ann, ann)
		for _, l := range [][]string{am.Destinations, am.InputSensitivity, am.Sources, am.ReturnSensitivity, am.Outcomes} {
			if len(l) > risk.MaxClassifierValues {
				t.Fatalf("%d values", len(l))
			}
			for _, v := range l {
				if len(v) > risk.MaxClassifierLen {
					t.Fatalf("value of %d bytes", len(v))
				}
			}
		}
		base := p.Effective("s", false, risk.ToolInfo{Name: "get_x"})
		got := p.Effective("s", false, risk.ToolInfo{Name: "get_x", Annotations: ann})
		if norm.Rank(risk.RiskOrder, got.RiskLevel) < norm.Rank(risk.RiskOrder, base.RiskLevel) ||
			norm.Rank(risk.ReversibilityOrder, got.Reversibility) < norm.Rank(risk.ReversibilityOrder, base.Reversibility) ||
			norm.Rank(risk.ApprovalOrder, got.ApprovalRecommendation) < norm.Rank(risk.ApprovalOrder, base.ApprovalRecommendation) ||
			got.MinTrustLevel < base.MinTrustLevel || len(got.SideEffects) < len(base.SideEffects) {
			t.Fatalf("lowered: %+v from %+v", got, base)
		}
	})
}

// An unclassified tool's approvers see its action-metadata among the
// server's hints.
func TestActionMetadataHintsForApprovers(t *testing.T) {
	p, _ := NewPolicy(Config{}) // ask: the tool stays unclassified
	e := p.Effective("s", false, risk.ToolInfo{Name: "zork", Annotations: json.RawMessage(`{"readOnlyHint":true,"` + risk.ActionMetadataKey +
		`":{"outcome":"irreversible","requiresReview":true,"returnMetadata":{"source":"untrustedPublic"}}}`)})
	if !e.Unclassified {
		t.Fatalf("classified: %+v", e)
	}
	want := []string{"readOnlyHint=true", "action-metadata outcomes=irreversible", "action-metadata returnSource=untrustedpublic", "action-metadata requiresReview=true"}
	if !slices.Equal(e.Hints, want) {
		t.Errorf("hints %q, want %q", e.Hints, want)
	}
}
