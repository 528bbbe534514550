package terminal

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func TestUnclassifiedHintsAreShownNotTrusted(t *testing.T) {
	p := mustPolicy(t, rules.Config{})
	e := p.Effective("srv", false, risk.ToolInfo{Name: "x", Annotations: json.RawMessage(`{"readOnlyHint":true,"category":"read"}`)})
	if !e.Unclassified || e.Category != risk.CategoryDestroy {
		t.Fatalf("an untrusted server's hints classified the tool: %+v", e)
	}
	if diff := cmp.Diff([]string{"readOnlyHint=true", "category=read"}, e.Hints); diff != "" {
		t.Errorf("hints (-want +got)\n%s", diff)
	}
	text := describeRequest(&approvals.Request{Server: "srv", Tool: "x", Risk: e, Unclassified: true, Hints: e.Hints}, "{}", time.Now())
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
	partial := mustPolicy(t, rules.Config{Catalogue: []rules.CatalogueEntry{{Server: "srv", Tool: "x", Metadata: risk.RawMetadata{Category: s("read")}}}}).
		Effective("srv", false, risk.ToolInfo{Name: "x"})
	classified := mustPolicy(t, rules.Config{Catalogue: []rules.CatalogueEntry{{Server: "srv", Tool: "x", Metadata: risk.RawMetadata{
		Category: s("read"), RiskLevel: s("low"), BlastRadius: s("item"), Reversibility: s("auto"), ApprovalRecommendation: s("none"), MinTrustLevel: 1}}}}).
		Effective("srv", false, risk.ToolInfo{Name: "x"})
	for _, tc := range []struct {
		name string
		e    risk.Effective
		want string
	}{
		{"nobody classified it", risk.FailClosed(), "unclassified (nobody rated this tool's risk)"},
		{"the catalogue gave the category", partial, "unclassified (nobody rated the rest of this tool's risk): read"},
		{"classified", classified, "read, low risk, blast radius item, reversibility auto, side effects none, needs trust 1"},
	} {
		if got := DescribeRisk(tc.e, tc.e.Unclassified || tc.name == "nobody classified it"); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func mustPolicy(t *testing.T, cfg rules.Config) *rules.Policy {
	t.Helper()
	p, err := rules.NewPolicy(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
