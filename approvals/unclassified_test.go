package approvals

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCatalogueCategoryAndRiskDeriveTheRest(t *testing.T) {
	s := func(v string) *string { return &v }
	p := mustPolicy(t, Config{Catalogue: []CatalogueEntry{
		{Server: "w", Tool: "*", Metadata: RawMetadata{Category: s("read"), RiskLevel: s("low")}},
		{Server: "k", Tool: "*", Metadata: RawMetadata{Category: s("delete"), RiskLevel: s("high")}},
	}})
	tests := []struct {
		server string
		tool   ToolInfo
		want   fields
	}{
		// A name with no known verb: the operator's classification is
		// enough; nothing stays at the fail-closed default.
		{"w", ToolInfo{Name: "weather"}, fields{CategoryRead, RiskLow, BlastItem, ReversibleAuto, []string{}, ApprovalNone, 1,
			Sources{SourceCatalogue, SourceCatalogue, SourceInferred, SourceInferred, SourceInferred, SourceInferred, SourceInferred}}},
		// The scope parameter widens the blast radius as inference would.
		{"k", ToolInfo{Name: "purge", InputSchema: json.RawMessage(`{"type":"object","properties":{"namespace":{"type":"string"}}}`)},
			fields{CategoryDelete, RiskHigh, BlastNamespace, ReversibleNone, []string{}, ApprovalSingle, 3,
				Sources{SourceCatalogue, SourceCatalogue, SourceInferred, SourceInferred, SourceInferred, SourceInferred, SourceInferred}}},
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
		{"a declared minTrustLevel above the session still denies", Config{NoMatch: "allow", Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: RawMetadata{MinTrustLevel: 4}}}}, 2, ActionDeny, 0, OutcomeTrustDenied},
		{"classified tools are not asked", Config{NoMatch: "allow", Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: RawMetadata{Category: s("read"), RiskLevel: s("low")}}}}, 1, ActionAllow, 0, OutcomeAutoAllowed},
	}
	tool := ToolInfo{Name: "frobnicate", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}
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

func TestUnclassifiedHintsAreShownNotTrusted(t *testing.T) {
	p := mustPolicy(t, Config{})
	e := p.Effective("srv", false, ToolInfo{Name: "x", Annotations: json.RawMessage(`{"readOnlyHint":true,"category":"read"}`)})
	if !e.Unclassified || e.Category != CategoryDestroy {
		t.Fatalf("an untrusted server's hints classified the tool: %+v", e)
	}
	if diff := cmp.Diff([]string{"readOnlyHint=true", "category=read"}, e.Hints); diff != "" {
		t.Errorf("hints (-want +got)\n%s", diff)
	}
	text := describeRequest(&Request{Server: "srv", Tool: "x", Risk: e, Unclassified: true, Hints: e.Hints}, "{}", time.Now())
	for _, want := range []string{"risk:       unclassified (nobody rated this tool's risk)\n", "unclassified: nobody classified this tool", "server says (untrusted): readOnlyHint=true, category=read"} {
		if !strings.Contains(text, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, text)
		}
	}
	// The fail-closed bucket is what rules see, not the tool's risk.
	for _, bucket := range []string{"destroy", "critical", "global"} {
		if strings.Contains(text, bucket) {
			t.Errorf("the prompt presents the fail-closed bucket (%s) as the tool's risk:\n%s", bucket, text)
		}
	}
}

// The risk line shows what someone classified and calls the rest
// unclassified; a classified tool's line is every field.
func TestDescribeRisk(t *testing.T) {
	s := func(v string) *string { return &v }
	partial := mustPolicy(t, Config{Catalogue: []CatalogueEntry{{Server: "srv", Tool: "x", Metadata: RawMetadata{Category: s("read")}}}}).
		Effective("srv", false, ToolInfo{Name: "x"})
	classified := mustPolicy(t, Config{Catalogue: []CatalogueEntry{{Server: "srv", Tool: "x", Metadata: RawMetadata{
		Category: s("read"), RiskLevel: s("low"), BlastRadius: s("item"), Reversibility: s("auto"), ApprovalRecommendation: s("none"), MinTrustLevel: 1}}}}).
		Effective("srv", false, ToolInfo{Name: "x"})
	for _, tc := range []struct {
		name string
		e    Effective
		want string
	}{
		{"nobody classified it", FailClosed(), "unclassified (nobody rated this tool's risk)"},
		{"the catalogue gave the category", partial, "unclassified (nobody rated the rest of this tool's risk): read"},
		{"classified", classified, "read, low risk, blast radius item, reversibility auto, side effects none, needs trust 1"},
	} {
		if got := DescribeRisk(tc.e, tc.e.Unclassified || tc.name == "nobody classified it"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNeverAllowedReasonsNameTheFix(t *testing.T) {
	s := func(v string) *string { return &v }
	tool := ToolInfo{Name: "drop"}
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"strict, unclassified", Config{Unclassified: UnclassifiedStrict}, []string{"needs trust level 5; the session has 1", "--trust", "agenthost policy init"}},
		{"classified above the session", Config{Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: RawMetadata{Category: s("delete"), RiskLevel: s("high")}}}},
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
