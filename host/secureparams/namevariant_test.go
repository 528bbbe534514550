package secureparams

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/google/go-cmp/cmp"
)

// pairwiseNameVariants is nameVariantWarnings as it was: every pair of
// names compared with guard.EquivalentNames, each normalised afresh.
func pairwiseNameVariants(secure []string, input []foundName) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range input {
		for _, s := range secure {
			if n.name == s || seen[n.name+"\x00"+s] || !guard.EquivalentNames(n.name, s) {
				continue
			}
			seen[n.name+"\x00"+s] = true
			out = append(out, fmt.Sprintf("inputSchema property %q differs from secure parameter %q only in case or separators; calls whose arguments use it will be refused", n.name, s))
		}
	}
	return out
}

func namesOf(list string) []foundName {
	var out []foundName
	for n := range strings.SplitSeq(list, ",") {
		out = append(out, foundName{name: n})
	}
	return out
}

func TestNameVariantWarnings(t *testing.T) {
	tests := []struct {
		secure, input string
		want          int
	}{
		{"tenant_id", "query,tenant_id,limit", 0},
		{"tenant_id", "TenantID,tenant-id,TENANT_ID,TenantID", 3},
		{"tenant_id,region", "Region,tenantId,ｔｅｎａｎｔ_ｉｄ,reg_ion", 4},
		{"İd", "id,ID,ıd", 3},
		{"_", "-,__,x", 0}, // "_" normalises to nothing: only EqualFold
		{"", "a", 0},
	}
	for _, tc := range tests {
		secure, input := strings.Split(tc.secure, ","), namesOf(tc.input)
		got := nameVariantWarnings(secure, input)
		if len(got) != tc.want {
			t.Errorf("%q against %q: %d warnings, want %d: %q", tc.input, tc.secure, len(got), tc.want, got)
		}
		if diff := cmp.Diff(pairwiseNameVariants(secure, input), got); diff != "" {
			t.Errorf("%q against %q: differs from the pairwise comparison:\n%s", tc.input, tc.secure, diff)
		}
	}
}

// FuzzNameVariantWarnings: normalising each name once warns exactly as
// comparing every pair afresh.
func FuzzNameVariantWarnings(f *testing.F) {
	f.Add("tenant_id,region", "TenantID,Region,q,tenant_id")
	f.Add("İd", "id,ıd,ID")
	f.Fuzz(func(t *testing.T, secure, input string) {
		s, in := strings.Split(secure, ","), namesOf(input)
		if diff := cmp.Diff(pairwiseNameVariants(s, in), nameVariantWarnings(s, in)); diff != "" {
			t.Fatalf("%q against %q:\n%s", input, secure, diff)
		}
	})
}
