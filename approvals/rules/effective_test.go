package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals/risk"
)

func mustPolicy(t testing.TB, cfg Config) *Policy {
	t.Helper()
	p, err := NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fields is the comparable part of Effective, for compact tables.
type fields struct {
	Category    risk.Category
	Risk        risk.RiskLevel
	Blast       risk.BlastRadius
	Rev         risk.Reversibility
	SideEffects []string
	Approval    risk.ApprovalRecommendation
	Trust       int
	Source      risk.Sources
}

func fieldsOf(e risk.Effective) fields {
	return fields{e.Category, e.RiskLevel, e.BlastRadius, e.Reversibility, e.SideEffects, e.ApprovalRecommendation, e.MinTrustLevel, e.Source}
}

func TestEffectiveStrictMissingMetadataIsFailClosed(t *testing.T) {
	p := mustPolicy(t, Config{Unclassified: UnclassifiedStrict})
	for _, trusted := range []bool{true, false} {
		for _, tool := range []risk.ToolInfo{
			{Name: "get_user"},
			{Name: "drop_database", Annotations: json.RawMessage(`{}`)},
			{Name: "anything", Annotations: json.RawMessage(`{"title":"x","idempotentHint":true}`)},
			{Name: "broken", Annotations: json.RawMessage(`not json`)},
		} {
			got := fieldsOf(p.Effective("srv", trusted, tool))
			want := fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, risk.AllSources(risk.SourceDefault)}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s trusted=%v (-want +got)\n%s", tool.Name, trusted, diff)
			}
		}
	}
}

func TestEffectiveProvenance(t *testing.T) {
	s := func(v string) *string { return &v }
	catalogue := []CatalogueEntry{
		{Server: "orders", Tool: "get_*", Metadata: risk.RawMetadata{Category: s("read"), RiskLevel: s("low"), BlastRadius: s("item"),
			Reversibility: s("auto"), ApprovalRecommendation: s("none"), MinTrustLevel: 1}},
		{Server: "orders", Tool: "get_secret", Metadata: risk.RawMetadata{RiskLevel: s("critical")}}, // shadowed: first match wins
		{Server: "*", Tool: "partial_*", Metadata: risk.RawMetadata{RiskLevel: s("medium")}},
	}
	strict := mustPolicy(t, Config{Unclassified: UnclassifiedStrict, Catalogue: catalogue})
	infer := mustPolicy(t, Config{Unclassified: UnclassifiedInfer, Catalogue: catalogue})
	declared := func(raw string) json.RawMessage { return json.RawMessage(raw) }
	src := func(cat, level, blast, rev, side, appr, trust risk.Source) risk.Sources {
		return risk.Sources{Category: cat, RiskLevel: level, BlastRadius: blast, Reversibility: rev, SideEffects: side, ApprovalRecommendation: appr, MinTrustLevel: trust}
	}
	const (
		C = risk.SourceCatalogue
		D = risk.SourceDeclared
		I = risk.SourceInferred
		F = risk.SourceDefault
	)
	tests := []struct {
		name    string
		policy  *Policy
		server  string
		trusted bool
		tool    risk.ToolInfo
		want    fields
	}{
		{
			name:   "untrusted declares low on drop_database, strict: stays critical",
			policy: strict, server: "db", tool: risk.ToolInfo{Name: "drop_database",
				Annotations: declared(`{"riskLevel":"low","category":"read","blastRadius":"item","minTrustLevel":1,"approvalRecommendation":"none","reversibility":"auto"}`)},
			want: fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, risk.AllSources(F)},
		},
		{
			name:   "untrusted declares low on drop_database, infer: stays destroy/critical",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "drop_database",
				Annotations: declared(`{"riskLevel":"low","category":"read","minTrustLevel":1,"approvalRecommendation":"none","reversibility":"auto"}`)},
			want: fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastItem, risk.ReversibleNone, []string{"state_loss"}, risk.ApprovalMulti, 4, risk.AllSources(I)},
		},
		{
			name:   "untrusted declaration raises above inference",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "get_rows",
				Annotations: declared(`{"riskLevel":"high","blastRadius":"cluster","minTrustLevel":4,"sideEffects":["cost"],"approvalRecommendation":"multi"}`)},
			want: fields{risk.CategoryRead, risk.RiskHigh, risk.BlastCluster, risk.ReversibleAuto, []string{"cost"}, risk.ApprovalMulti, 4, src(I, D, D, I, D, D, D)},
		},
		{
			name:   "trusted declared beats inferred",
			policy: infer, server: "db", trusted: true, tool: risk.ToolInfo{Name: "delete_row",
				Annotations: declared(`{"category":"mutate","riskLevel":"medium","blastRadius":"item","reversibility":"manual","sideEffects":[],"approvalRecommendation":"single","minTrustLevel":2}`)},
			want: fields{risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ReversibleManual, []string{}, risk.ApprovalSingle, 2, risk.AllSources(D)},
		},
		{
			name:   "trusted partial declaration: the rest is inferred from the effective values",
			policy: infer, server: "db", trusted: true, tool: risk.ToolInfo{Name: "delete_row",
				Annotations: declared(`{"riskLevel":"critical"}`)},
			want: fields{risk.CategoryDelete, risk.RiskCritical, risk.BlastItem, risk.ReversibleNone, []string{"state_loss"}, risk.ApprovalMulti, 4, src(I, D, I, I, I, I, I)},
		},
		{
			name:   "catalogue beats trusted declaration",
			policy: infer, server: "orders", trusted: true, tool: risk.ToolInfo{Name: "get_order",
				Annotations: declared(`{"category":"destroy","riskLevel":"critical","blastRadius":"global","reversibility":"none","approvalRecommendation":"multi","minTrustLevel":5}`)},
			want: fields{risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ReversibleAuto, []string{}, risk.ApprovalNone, 1, src(C, C, C, C, I, C, C)},
		},
		{
			name:   "catalogue first match wins",
			policy: strict, server: "orders", tool: risk.ToolInfo{Name: "get_secret"},
			want: fields{risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ReversibleAuto, []string{}, risk.ApprovalNone, 1, src(C, C, C, C, F, C, C)},
		},
		{
			name:   "catalogue entry for another server does not match",
			policy: strict, server: "billing", tool: risk.ToolInfo{Name: "get_order"},
			want: fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, risk.AllSources(F)},
		},
		{
			name:   "partial catalogue entry falls through to inference",
			policy: infer, server: "x", tool: risk.ToolInfo{Name: "partial_delete"},
			want: fields{risk.CategoryDelete, risk.RiskMedium, risk.BlastItem, risk.ReversibleNone, []string{"state_loss"}, risk.ApprovalSingle, 2, src(I, C, I, I, I, I, I)},
		},
		{
			name:   "unknown enum strings from a trusted server are most restrictive",
			policy: infer, server: "db", trusted: true, tool: risk.ToolInfo{Name: "get_x",
				Annotations: declared(`{"category":"nuke","riskLevel":"extreme","blastRadius":7,"reversibility":null,"approvalRecommendation":"maybe","minTrustLevel":"3"}`)},
			want: fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, src(D, D, D, D, I, D, D)},
		},
		{
			name:   "unknown enum strings from an untrusted server raise to most restrictive",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "get_x", Annotations: declared(`{"riskLevel":"LOW"}`)},
			// approvalRecommendation and minTrustLevel follow the raised risk.
			want: fields{risk.CategoryRead, risk.RiskCritical, risk.BlastItem, risk.ReversibleAuto, []string{}, risk.ApprovalMulti, 4, src(I, D, I, I, I, I, I)},
		},
		{
			name:   "consistency floor applies to trusted declarations",
			policy: infer, server: "db", trusted: true, tool: risk.ToolInfo{Name: "x_tool",
				Annotations: declared(`{"category":"destroy","riskLevel":"low","blastRadius":"item","reversibility":"none","approvalRecommendation":"single","minTrustLevel":2}`)},
			want: fields{risk.CategoryDestroy, risk.RiskHigh, risk.BlastItem, risk.ReversibleNone, []string{}, risk.ApprovalSingle, 2, src(D, D, D, D, F, D, D)},
		},
		{
			name:   "destructiveHint on an untrusted server raises",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "update_row", Annotations: declared(`{"destructiveHint":true}`)},
			want: fields{risk.CategoryMutate, risk.RiskHigh, risk.BlastItem, risk.ReversibleManual, []string{}, risk.ApprovalSingle, 3, src(I, D, I, I, I, I, I)},
		},
		{
			name:   "readOnlyHint on an untrusted server never lowers",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "delete_row", Annotations: declared(`{"readOnlyHint":true}`)},
			want: fields{risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ReversibleNone, []string{"state_loss"}, risk.ApprovalSingle, 3, risk.AllSources(I)},
		},
		{
			name:   "readOnlyHint on a trusted server classifies",
			policy: strict, server: "db", trusted: true, tool: risk.ToolInfo{Name: "weather", Annotations: declared(`{"readOnlyHint":true}`)},
			want: fields{risk.CategoryRead, risk.RiskLow, risk.BlastGlobal, risk.ReversibleAuto, []string{}, risk.ApprovalMulti, 5, src(D, D, F, D, F, F, F)},
		},
		{
			name:   "destructiveHint wins over readOnlyHint",
			policy: strict, server: "db", trusted: true, tool: risk.ToolInfo{Name: "weather", Annotations: declared(`{"readOnlyHint":true,"destructiveHint":true}`)},
			want: fields{risk.CategoryMutate, risk.RiskHigh, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, src(D, D, F, F, F, F, F)},
		},
		{
			name:   "non-ASCII name is not inferred",
			policy: infer, server: "db", tool: risk.ToolInfo{Name: "gеt_user"},
			want: fields{risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ReversibleNone, []string{}, risk.ApprovalMulti, 5, risk.AllSources(F)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.policy.Effective(tt.server, tt.trusted, tt.tool)
			if diff := cmp.Diff(tt.want, fieldsOf(e)); diff != "" {
				t.Errorf("(-want +got)\n%s\nnotes: %q", diff, e.Notes)
			}
			if usesSource(e.Source, risk.SourceInferred) != (e.InferenceVersion == risk.InferenceVersion) {
				t.Errorf("inference version %q with sources %+v", e.InferenceVersion, e.Source)
			}
		})
	}
}

func TestEffectiveMinTrustLevelNormalisation(t *testing.T) {
	p := mustPolicy(t, Config{Unclassified: UnclassifiedInfer})
	tests := []struct {
		declared  string
		trusted   int // result for a trusted server
		untrusted int // result for an untrusted server (inferred 1 for get_x)
	}{
		{`0`, 5, 5},
		{`6`, 5, 5},
		{`2.5`, 5, 5},
		{`"3"`, 5, 5},
		{`null`, 5, 5},
		{`-3`, 5, 5},
		{`3`, 3, 3},
		{`1`, 1, 1},
	}
	for _, tt := range tests {
		tool := risk.ToolInfo{Name: "get_x", Annotations: json.RawMessage(`{"minTrustLevel":` + tt.declared + `}`)}
		if got := p.Effective("s", true, tool).MinTrustLevel; got != tt.trusted {
			t.Errorf("trusted minTrustLevel %s -> %d, want %d", tt.declared, got, tt.trusted)
		}
		if got := p.Effective("s", false, tool).MinTrustLevel; got != tt.untrusted {
			t.Errorf("untrusted minTrustLevel %s -> %d, want %d", tt.declared, got, tt.untrusted)
		}
	}
	// Untrusted cannot lower the inferred level of a delete tool (3).
	low := risk.ToolInfo{Name: "delete_x", Annotations: json.RawMessage(`{"minTrustLevel":1}`)}
	if got := p.Effective("s", false, low); got.MinTrustLevel != 3 || got.Source.MinTrustLevel != risk.SourceInferred {
		t.Errorf("untrusted lowered minTrustLevel: %d from %s", got.MinTrustLevel, got.Source.MinTrustLevel)
	}
}

func TestEffectiveNotesExplainAdjustments(t *testing.T) {
	p := mustPolicy(t, Config{Unclassified: UnclassifiedInfer})
	e := p.Effective("db", false, risk.ToolInfo{Name: "drop_database", Annotations: json.RawMessage(`{"riskLevel":"low"}`)})
	joined := strings.Join(e.Notes, "\n")
	if !strings.Contains(joined, "declared riskLevel low ignored") {
		t.Errorf("notes do not explain the ignored declaration: %q", e.Notes)
	}
}
