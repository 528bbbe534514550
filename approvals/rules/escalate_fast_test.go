package rules

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Escalators spelled with escapes, and every scope word, must raise what
// the policy sees: the fast path once skipped them by reading the raw text.
func TestEscalateSeesEveryEscalatorSpelling(t *testing.T) {
	base := risk.Effective{Category: risk.CategoryMutate, RiskLevel: risk.RiskMedium, BlastRadius: risk.BlastItem}
	tests := []struct {
		args  string
		risk  risk.RiskLevel
		blast risk.BlastRadius
	}{
		{`{"\u0066orce":true}`, risk.RiskHigh, risk.BlastItem},
		{`{"c\u0061scade":true}`, risk.RiskHigh, risk.BlastItem},
		{`{"re\u0063ursive":"yes"}`, risk.RiskHigh, risk.BlastItem},
		{`{"all\u005fnamespaces":true}`, risk.RiskHigh, risk.BlastCluster},
		{`{"n\u0061mespace":"*"}`, risk.RiskMedium, risk.BlastCluster},
		{`{"ns":"*"}`, risk.RiskMedium, risk.BlastCluster},
		{`{"project":"*"}`, risk.RiskMedium, risk.BlastCluster},
		{`{"projectId":["*"]}`, risk.RiskMedium, risk.BlastCluster},
		{`{"target":{"NS":"*"}}`, risk.RiskMedium, risk.BlastCluster},
		{`{"clusters":"*"}`, risk.RiskMedium, risk.BlastOrganization},
		{`{"tenant":" * "}`, risk.RiskMedium, risk.BlastGlobal},
		{`{"organisations":"*"}`, risk.RiskMedium, risk.BlastGlobal},
		{`{"orgs":"*","force":1}`, risk.RiskHigh, risk.BlastGlobal},
		{`{"instance":"*","options":{"dns":"*"},"note":"force cascade"}`, risk.RiskMedium, risk.BlastItem},
	}
	for _, tc := range tests {
		got, _ := escalate(base, json.RawMessage(tc.args), ArgsCheck{})
		if got.RiskLevel != tc.risk || got.BlastRadius != tc.blast {
			t.Errorf("Escalate(%s) = %s/%s, want %s/%s", tc.args, got.RiskLevel, got.BlastRadius, tc.risk, tc.blast)
		}
	}
}

// The fast path must never change a decision: every case agrees with the
// full walk.
func TestEscalateFastPathAgreesWithTheWalk(t *testing.T) {
	for _, c := range escalateSeeds() {
		checkEscalateAgrees(t, c)
	}
}

func escalateSeeds() []string {
	return []string{
		`{"query":"SELECT 1"}`, `{"FORCE":true}`, `{"for-ce":1}`, `{"a":{"Recursive":"yes"}}`,
		`{"allNamespaces":true}`, `{"namespace":"*"}`, `{"cluster":"*"}`, `{"org":"*"}`, `{"tenant":"*"}`,
		`{"note":"forget it"}`, `{"x":"` + strings.Repeat("a", 9000) + `"}`,
		strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40),
		strings.Repeat(`{"a":`, maxEscalateDepth-1) + `[]` + strings.Repeat(`}`, maxEscalateDepth-1),
		`{"\u0066orce":true}`, `{"c\u0061scade":true}`, `{"n\u0061mespace":"*"}`,
		`{"ns":"*"}`, `{"project":"*"}`, `{"HTTPNs":"*"}`, `{"ns2":"*"}`, `{"x\"force\"":"y"}`,
		`{"fo\u0000rce":true}`, "{\"fo\xffrce\":true}", `{"f\u00f6rce":true}`, `{"a":1,"a":{"force":true}}`,
		`{"force":true,"force":false}`, `{"namespace":"*","namespace":"x"}`, ` {"k" : "v"} `,
		`[1]`, `{"a":1} x`, `null`, ``, `"force"`,
	}
}

func checkEscalateAgrees(t *testing.T, args string) {
	t.Helper()
	for _, base := range []risk.Effective{
		{Category: risk.CategoryMutate, RiskLevel: risk.RiskLow, BlastRadius: risk.BlastItem},
		{Category: risk.CategoryRead, RiskLevel: risk.RiskCritical, BlastRadius: risk.BlastNamespace},
	} {
		raw := json.RawMessage(args)
		slow, slowNotes := escalateWalk(base, raw)
		// Unchecked, and with the call's one check of the arguments
		// (Call.ArgsCheck): the check only saves the validation.
		for _, checked := range []ArgsCheck{{}, CheckArgs(raw)} {
			fast, fastNotes := escalate(base, raw, checked)
			if fast.RiskLevel != slow.RiskLevel || fast.BlastRadius != slow.BlastRadius || strings.Join(fastNotes, "\n") != strings.Join(slowNotes, "\n") {
				t.Fatalf("%.80q (checked %v): fast %s/%s %q, walk %s/%s %q", args, checked.Valid(raw), fast.RiskLevel, fast.BlastRadius, fastNotes, slow.RiskLevel, slow.BlastRadius, slowNotes)
			}
		}
	}
}

// FuzzEscalateFastPath: for any argument text, the fast path's result is
// the full decode-and-walk result.
func FuzzEscalateFastPath(f *testing.F) {
	for _, s := range escalateSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, args string) {
		checkEscalateAgrees(t, args)
	})
}

// escalatorKey must be exactly the walk's test of a key.
func FuzzEscalatorKey(f *testing.F) {
	for _, s := range []string{"force", "allNamespaces", "ns", "HTTPNs", "projectID", "x-Cluster_2", "dns", "\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := norm.SplitTokens(key), referenceSplitTokens(key); strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("splitTokens(%q) = %q, reference %q", key, got, want)
		}
		want := risk.RiskyFlags[norm.NormalizeKey(key)]
		for _, tok := range referenceSplitTokens(key) {
			if _, ok := risk.ScopeTokens[tok]; ok {
				want = true
			}
		}
		if got := escalatorKey([]byte(key)); got != want {
			t.Fatalf("escalatorKey(%q) = %v, walk's test %v", key, got, want)
		}
	})
}

// referenceSplitTokens is splitTokens as first written (a word buffer),
// kept to check the index-based tokenBounds against.
func referenceSplitTokens(s string) []string {
	var tokens []string
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			tokens = append(tokens, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !norm.IsASCIIAlnum(c) {
			flush()
			continue
		}
		if len(cur) > 0 {
			prev := cur[len(cur)-1]
			switch {
			case norm.IsLower(prev) && norm.IsUpper(c):
				flush()
			case norm.IsUpper(prev) && norm.IsUpper(c) && i+1 < len(s) && norm.IsLower(s[i+1]):
				flush()
			case norm.IsDigit(prev) != norm.IsDigit(c):
				flush()
			}
		}
		cur = append(cur, c)
	}
	flush()
	return tokens
}
