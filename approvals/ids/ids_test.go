package ids

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestNormalizeID(t *testing.T) {
	tests := []struct {
		in, want string
		invalid  bool
	}{
		{in: "bob", want: "bob"},
		{in: "Bob", want: "bob"},
		{in: " bob\t", want: "bob"},
		{in: "\uff42\uff4f\uff42", want: "bob"},
		{in: "\uff22\uff2f\uff22", want: "bob"},
		{in: "\u3000bob\u3000", want: "bob"},
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "bob smith", want: "bob smith"},
		{in: "Bob Smith", want: "bob smith"},
		{in: "alice@example.com", want: "alice@example.com"},
		{in: "ΣΑΣ", want: "σασ"},
		{in: "e\u0301", want: "\u00e9"},
		{in: "Straße", want: "straße"},
		// Invisible and default-ignorable code points are refused, never
		// dropped: "ops" followed by any of them is not "ops".
		{in: "ops\u034f", invalid: true}, // combining grapheme joiner
		{in: "ops\u3164", invalid: true}, // Hangul filler
		{in: "ops\ufe0f", invalid: true}, // variation selector 16
		{in: "ops\u2800", invalid: true}, // blank Braille pattern
		{in: "ops\u115f", invalid: true},
		{in: "ops\uffa0", invalid: true},
		{in: "ops\u17b4", invalid: true},
		{in: "ops\u180e", invalid: true},
		{in: "ops\U000e0001", invalid: true},
		{in: "bob\u200b", invalid: true},
		{in: "\ufeffbob", invalid: true},
		{in: "ali\u2060ce", invalid: true},
		{in: "ops\u00ad", invalid: true},
		{in: "\u200b", invalid: true},
		{in: "a\u00a0b", invalid: true},
		{in: "a\tb", invalid: true},
		{in: "bob  smith", invalid: true},
		{in: "\ufb01", invalid: true},    // a compatibility ligature
		{in: "ops\u2603", invalid: true}, // a symbol outside ASCII
	}
	for _, tc := range tests {
		got, err := NormalizeID(tc.in)
		switch {
		case tc.invalid && !errors.Is(err, ErrInvalidID):
			t.Errorf("NormalizeID(%q) = %q, %v; want ErrInvalidID", tc.in, got, err)
		case !tc.invalid && (err != nil || got != tc.want):
			t.Errorf("NormalizeID(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// Every code point Unicode calls default-ignorable, and every control,
// format, separator and space character, is refused inside an id and at
// its end (where trimming does not reach the ignorable ones).
func TestNormalizeIDRefusesEveryInvisibleCodePoint(t *testing.T) {
	tables := []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector}
	n := 0
	for _, tab := range tables {
		for r := rune(0); r <= unicode.MaxRune; r++ {
			if r == ' ' || !unicode.Is(tab, r) {
				continue
			}
			n++
			for _, id := range []string{"op" + string(r) + "s", "ops" + string(r)} {
				if unicode.IsSpace(r) && strings.HasSuffix(id, string(r)) {
					continue // trailing white space is trimmed: "ops " is "ops"
				}
				if got, err := NormalizeID(id); !errors.Is(err, ErrInvalidID) {
					t.Errorf("NormalizeID(%q) (%U) = %q, %v; want ErrInvalidID", id, r, got, err)
				}
				if !SameID(id, "ops") {
					t.Errorf("SameID(%q, ops) = false: an id that is not valid must fail closed", id)
				}
			}
		}
	}
	if n < 400 {
		t.Fatalf("only %d invisible code points checked", n)
	}
}

func TestSameID(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"alice", "ALICE", true},
		{"alice", "\uff41lice", true},
		{"alice", "bob", false},
		{"", "", false},
		{" ", "alice", false},
		{"\u200b", "", false},
		// An id that is not valid may be anyone's.
		{"ops\u034f", "ops", true},
		{"ops", "ops\u3164", true},
		{"ops\ufe0f", "someone", true},
	}
	for _, tc := range tests {
		if got := SameID(tc.a, tc.b); got != tc.want {
			t.Errorf("SameID(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := SameID(tc.b, tc.a); got != tc.want {
			t.Errorf("SameID(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

// FuzzNormalizeID: a normalised id is stable (normalising it again gives
// it back), holds no invisible code point, no surrounding or doubled
// space, and names the same person as the id it came from; an id that is
// not valid matches every id that is not blank.
func FuzzNormalizeID(f *testing.F) {
	for _, s := range []string{"bob", "Bob Smith", "\uff42\uff4f\uff42", "ops\u034f", "ops\u3164", "ops\ufe0f", "ops\u2800",
		"ΣΑΣ", "e\u0301", "\u3000bob\u3000", "a  b", "\u0130", "ﬁ", "\u05d0\u05d1", "x\u0627", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := NormalizeID(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidID) {
				t.Fatalf("NormalizeID(%q): %v, not ErrInvalidID", s, err)
			}
			if !blank(s) && !SameID(s, "someone") {
				t.Fatalf("SameID(%q, someone) = false for an id that is not valid", s)
			}
			return
		}
		if !utf8.ValidString(out) || strings.IndexFunc(out, invisible) >= 0 || strings.TrimSpace(out) != out || strings.Contains(out, "  ") {
			t.Fatalf("NormalizeID(%q) = %q", s, out)
		}
		again, err := NormalizeID(out)
		if err != nil || again != out {
			t.Fatalf("NormalizeID(%q) = %q, but NormalizeID(%q) = %q, %v", s, out, out, again, err)
		}
		if out == "" {
			if !blank(s) {
				t.Fatalf("NormalizeID(%q) = \"\" for an id that is not blank", s)
			}
			return
		}
		if !SameID(s, out) {
			t.Fatalf("SameID(%q, %q) = false", s, out)
		}
	})
}
