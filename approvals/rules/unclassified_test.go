package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals/risk"
)

func TestCatalogueCategoryAndRiskDeriveTheRest(t *testing.T) {
	s := func(v string) *string { return &v }
	p := mustPolicy(t, Config{Catalogue: []CatalogueEntry{
		{Server: "w", Tool: "*", Metadata: risk.RawMetadata{Category: s("read"), RiskLevel: s("low")}},
		{Server: "k", Tool: "*", Metadata: risk.RawMetadata{Category: s("delete"), RiskLevel: s("high")}},
	}})
	tests := []struct {
		server string
		tool   risk.ToolInfo
		want   fields
	}{
		// A name with no known verb: the operator's classification is
		// enough; nothing stays at the fail-closed default.
		{"w", risk.ToolInfo{Name: "weather"}, fields{risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ReversibleAuto, []string{}, risk.ApprovalNone, 1,
			risk.Sources{Category: risk.SourceCatalogue, RiskLevel: risk.SourceCatalogue, BlastRadius: risk.SourceInferred, Reversibility: risk.SourceInferred, SideEffects: risk.SourceInferred, ApprovalRecommendation: risk.SourceInferred, MinTrustLevel: risk.SourceInferred}}},
		// The scope parameter widens the blast radius as inference would.
		{"k", risk.ToolInfo{Name: "purge", InputSchema: json.RawMessage(`{"type":"object","properties":{"namespace":{"type":"string"}}}`)},
			fields{risk.CategoryDelete, risk.RiskHigh, risk.BlastNamespace, risk.ReversibleNone, []string{}, risk.ApprovalSingle, 3,
				risk.Sources{Category: risk.SourceCatalogue, RiskLevel: risk.SourceCatalogue, BlastRadius: risk.SourceInferred, Reversibility: risk.SourceInferred, SideEffects: risk.SourceInferred, ApprovalRecommendation: risk.SourceInferred, MinTrustLevel: risk.SourceInferred}}},
	}
	for _, tt := range tests {
		for _, trusted := range []bool{false, true} {
			e := p.Effective(tt.server, trusted, tt.tool)
			if diff := cmp.Diff(tt.want, fieldsOf(e)); diff != "" {
				t.Errorf("%s trusted=%v (-want +got)\n%s", tt.tool.Name, trusted, diff)
			}
			if e.Unclassified {
				t.Errorf("%s: classified by the catalogue, yet marked unclassified", tt.tool.Name)
			}
		}
	}
}

func TestUnclassifiedDecisions(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name      string
		cfg       Config
		trust     int
		action    Action
		approvers int
		outcome   Outcome
	}{
		{"ask: asks one person at trust 1 though the rules allow", Config{NoMatch: "allow"}, 1, ActionAsk, 1, ""},
		{"ask: a rule's quorum still counts", Config{Rules: []Rule{{ID: "d", When: Match{Category: []string{"destroy"}}, Decide: "ask", Approvers: 2}}}, 1, ActionAsk, 2, ""},
		{"ask: a deny rule on the bucket denies", Config{Rules: []Rule{{ID: "g", When: Match{BlastRadius: []string{"global"}}, Decide: "deny"}}}, 3, ActionDeny, 0, OutcomeDeniedByRule},
		{"infer: what inference cannot classify asks", Config{Unclassified: UnclassifiedInfer, NoMatch: "allow"}, 1, ActionAsk, 1, ""},
		{"strict: the bucket's trust level denies", Config{Unclassified: UnclassifiedStrict, NoMatch: "allow"}, 4, ActionDeny, 0, OutcomeTrustDenied},
		{"a declared minTrustLevel above the session still denies", Config{NoMatch: "allow", Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: risk.RawMetadata{MinTrustLevel: 4}}}}, 2, ActionDeny, 0, OutcomeTrustDenied},
		{"classified tools are not asked", Config{NoMatch: "allow", Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: risk.RawMetadata{Category: s("read"), RiskLevel: s("low")}}}}, 1, ActionAllow, 0, OutcomeAutoAllowed},
	}
	tool := risk.ToolInfo{Name: "frobnicate", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
	for _, tt := range tests {
		p := mustPolicy(t, tt.cfg)
		eff := p.Effective("srv", false, tool)
		d := p.Decide(eff, Call{Server: "srv", Tool: tool.Name, Args: json.RawMessage(`{}`), TrustLevel: tt.trust})
		if d.Action != tt.action || d.Approvers != tt.approvers || d.Outcome != tt.outcome {
			t.Errorf("%s: %s approvers %d outcome %q (%s), want %s %d %q", tt.name, d.Action, d.Approvers, d.Outcome, d.Reason, tt.action, tt.approvers, tt.outcome)
		}
		never, _ := p.NeverAllowed("srv", tool.Name, eff, tt.trust)
		if wantNever := tt.outcome == OutcomeTrustDenied || tt.outcome == OutcomeDeniedByRule; never != wantNever {
			t.Errorf("%s: NeverAllowed = %v, want %v", tt.name, never, wantNever)
		}
		if tt.action == ActionAsk && !d.Unclassified {
			t.Errorf("%s: the decision is not marked unclassified", tt.name)
		}
	}
}

func TestNeverAllowedReasonsNameTheFix(t *testing.T) {
	s := func(v string) *string { return &v }
	tool := risk.ToolInfo{Name: "drop"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"strict, unclassified", Config{Unclassified: UnclassifiedStrict}, []string{"needs trust level 5; the session has 1", "--trust", "agenthost policy init"}},
		{"classified above the session", Config{Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: risk.RawMetadata{Category: s("delete"), RiskLevel: s("high")}}}},
			[]string{"needs trust level 3", "lower minTrustLevel for it in approvals.catalogue"}},
		{"a deny rule on the bucket", Config{Rules: []Rule{{ID: "g", When: Match{BlastRadius: []string{"global"}}, Decide: "deny"}}},
			[]string{`rule "g"`, "agenthost policy explain srv drop", "agenthost policy init"}},
	}
	for _, tt := range tests {
		p := mustPolicy(t, tt.cfg)
		never, why := p.NeverAllowed("srv", tool.Name, p.Effective("srv", false, tool), 1)
		if !never {
			t.Fatalf("%s: not never-allowed", tt.name)
		}
		for _, want := range tt.want {
			if !strings.Contains(why, want) {
				t.Errorf("%s: the reason %q lacks %q", tt.name, why, want)
			}
		}
	}
}
