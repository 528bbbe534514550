package rules

import (
	"encoding/json"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// FuzzParseAnnotations: garbage must never panic, and whatever is parsed
// must normalise to known values.
func FuzzParseAnnotations(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"riskLevel":"low"}`, `{"minTrustLevel":2.5}`, `{"sideEffects":[1,"x"]}`, `[`, `"x"`, `{"category":{"a":[]}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := risk.ParseAnnotations(json.RawMessage(raw))
		if err != nil {
			return
		}
		p, _ := NewPolicy(Config{Unclassified: UnclassifiedInfer})
		for _, trusted := range []bool{true, false} {
			e := p.Effective("s", trusted, risk.ToolInfo{Name: "get_x", Annotations: json.RawMessage(raw)})
			if !norm.Known(risk.CategoryOrder, e.Category) || !norm.Known(risk.RiskOrder, e.RiskLevel) || e.MinTrustLevel < 1 || e.MinTrustLevel > 5 {
				t.Fatalf("not normalised: %+v (from %+v)", e, a)
			}
		}
	})
}
