package terminal

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestTerminalText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab"},
		{"日本語 é", "日本語 é"},
		{"\x1b[2Jcleared", `\u001b[2Jcleared`},
		{"title\x1b]0;x\x07", `title\u001b]0;x\u0007`},
		{"over\rwrite", `over\u000dwrite`},
		{"bidi\u202eevil", `bidi\u202eevil`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bad \xff utf8", `bad \ufffd utf8`},
	}
	for _, tc := range tests {
		if got := TerminalText(tc.in); got != tc.want {
			t.Errorf("TerminalText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzTerminalText: the result is valid UTF-8 whose only non-printable
// runes are newlines and tabs.
func FuzzTerminalText(f *testing.F) {
	for _, seed := range []string{"", "a\nb", "\x1b[31m", "\xff\xfe", "\u202e", "\r\n", "\u009b"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := TerminalText(s)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		for _, r := range got {
			if r != ' ' && r != '\n' && r != '\t' && !unicode.IsPrint(r) {
				t.Fatalf("%q kept %U", got, r)
			}
		}
		if terminalSafe(s, 1<<30) != strings.NewReplacer("\n", `\u000a`, "\t", `\u0009`).Replace(got) {
			t.Fatalf("TerminalText and terminalSafe disagree on %q", s)
		}
	})
}
