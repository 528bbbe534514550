package approvals

import (
	"encoding/json"
	"strings"
	"testing"
)

// The pre-filter must never change a decision: every case agrees with the
// full walk.
func TestEscalateFastPathAgreesWithTheWalk(t *testing.T) {
	base := Effective{Category: CategoryMutate, RiskLevel: RiskMedium, BlastRadius: BlastItem}
	cases := []string{
		`{"query":"SELECT 1"}`, `{"FORCE":true}`, `{"for-ce":1}`, `{"a":{"Recursive":"yes"}}`,
		`{"allNamespaces":true}`, `{"namespace":"*"}`, `{"cluster":"*"}`, `{"org":"*"}`, `{"tenant":"*"}`,
		`{"note":"forget it"}`, `{"x":"` + strings.Repeat("a", 9000) + `"}`,
		strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40),
	}
	for _, c := range cases {
		fast, _ := Escalate(base, json.RawMessage(c))
		slow, _ := escalateWalk(base, json.RawMessage(c))
		if fast.RiskLevel != slow.RiskLevel || fast.BlastRadius != slow.BlastRadius {
			t.Errorf("%.60s: fast %s/%s, walk %s/%s", c, fast.RiskLevel, fast.BlastRadius, slow.RiskLevel, slow.BlastRadius)
		}
	}
}
