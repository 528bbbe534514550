package terminal

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalText makes text from a server, a model or a plugin safe to show
// on a terminal: every non-printable rune (control characters such as ESC,
// BEL and CR, format characters such as bidi overrides, invalid UTF-8) is
// shown as \uXXXX, so the text cannot move the cursor, rewrite what is on
// screen or forge a prompt. Newlines and tabs are kept. Text with nothing
// to escape is returned as it is.
func TerminalText(s string) string { return escapeTerminal(s, 0, true) }

// escapeTerminal escapes non-printable runes as \uXXXX, keeping newlines
// and tabs when keepLayout is set, and caps the result at max runes (0: no
// cap), marking a cut with "…".
func escapeTerminal(s string, max int, keepLayout bool) string {
	if max == 0 && terminalClean(s, keepLayout) {
		return s
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if max > 0 && n >= max {
			b.WriteString("…")
			break
		}
		n++
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == ' ', keepLayout && (r == '\n' || r == '\t'), unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// terminalClean reports text escapeTerminal would leave as it is.
func terminalClean(s string, keepLayout bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f || keepLayout && (c == '\n' || c == '\t') {
			continue
		}
		if c < utf8.RuneSelf {
			return false
		}
		for _, r := range s[i:] { // the rest, rune by rune
			if r == utf8.RuneError || r != ' ' && !unicode.IsPrint(r) && !(keepLayout && (r == '\n' || r == '\t')) {
				return false
			}
		}
		return true
	}
	return true
}
