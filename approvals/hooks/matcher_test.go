package hooks

import "testing"

// TestSimpleMatcher: a list of exact names is one or more of letters,
// digits, '_', '|' and '-' (what `^[A-Za-z0-9_|-]+$` accepted); anything
// else is a regular expression.
func TestSimpleMatcher(t *testing.T) {
	for _, tc := range []struct {
		m    string
		want bool
	}{
		{"Bash", true},
		{"mcp__fs__read_file|Write", true},
		{"a-b_9|Z", true},
		{"", false},
		{"mcp__.*", false},
		{"Bash ", false},
		{"Edit\n", false},
		{"é", false},
	} {
		if got := simpleMatcher(tc.m); got != tc.want {
			t.Errorf("simpleMatcher(%q) = %v, want %v", tc.m, got, tc.want)
		}
	}
}
