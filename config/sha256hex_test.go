package config

import (
	"strings"
	"testing"
)

// TestIsSHA256Hex: exactly 64 hexadecimal digits, either case, nothing
// around them (what `^[0-9a-fA-F]{64}$` accepted).
func TestIsSHA256Hex(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{hex, true},
		{strings.ToUpper(hex), true},
		{hex[:63], false},
		{hex + "0", false},
		{hex[:63] + "g", false},
		{hex[:63] + "\n", false},
		{" " + hex[1:], false},
		{"", false},
	} {
		if got := isSHA256Hex(tc.s); got != tc.want {
			t.Errorf("isSHA256Hex(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}
