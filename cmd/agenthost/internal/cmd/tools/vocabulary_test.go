package tools

import (
	"encoding/json"
	"testing"
)

// `tools` says under a tool what its risk took from action-metadata.
func TestVocabularyLine(t *testing.T) {
	src := func(s string) string {
		return `{"category":"` + s + `","riskLevel":"` + s + `","blastRadius":"` + s + `","reversibility":"` + s +
			`","sideEffects":"` + s + `","approvalRecommendation":"` + s + `","minTrustLevel":"` + s + `"}`
	}
	for _, tc := range []struct {
		name, risk, want string
	}{
		{"none", `{"category":"read","riskLevel":"low","source":` + src("declared") + `}`, ""},
		{"null risk", `null`, ""},
		{"no risk", ``, ""},
		{"fields", `{"category":"read","riskLevel":"high","reversibility":"none","sideEffects":["external_notification"],"minTrustLevel":1,
			"source":{"category":"inferred","riskLevel":"action-metadata","blastRadius":"inferred","reversibility":"action-metadata","sideEffects":"action-metadata","approvalRecommendation":"inferred","minTrustLevel":"inferred"}}`,
			"from action-metadata: riskLevel high; reversibility none; sideEffects [external_notification]"},
		{"labels only", `{"category":"read","source":` + src("declared") + `,"resultLabels":["untrusted","sensitive"]}`,
			"from action-metadata: results labelled untrusted, sensitive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := vocabularyLine(json.RawMessage(tc.risk)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
