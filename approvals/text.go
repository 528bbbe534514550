package approvals

import (
	"fmt"
	"iter"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// stripControl drops control and format characters (including bidi
// overrides and zero-width characters) and invalid UTF-8, so text from
// servers, models or approvers cannot steer a terminal or hide content.
func stripControl(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		if unicode.In(r, unicode.Cc, unicode.Cf) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// oneLine strips control characters, turns any run of whitespace into one
// space and caps the result at max runes (marking a cut with "…").
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, s)), " ")
	s = stripControl(s)
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

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

func sortStrings(s []string) { sort.Strings(s) }

// splitTokens splits an identifier into lower-case words: at any character
// that is not an ASCII letter or digit (so at _ - . / and spaces), at
// camelCase boundaries ("deleteUser", "HTTPServer") and between letters and
// digits (tokenBounds).
func splitTokens(s string) []string {
	var tokens []string
	for start, end := range tokenBounds([]byte(s)) {
		tokens = append(tokens, strings.ToLower(s[start:end]))
	}
	return tokens
}

// tokenBounds yields the start and end of each word of an identifier, as
// splitTokens splits it.
func tokenBounds(s []byte) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		start := -1
		for i, c := range s {
			switch {
			case !isASCIIAlnum(c):
				if start >= 0 && !yield(start, i) {
					return
				}
				start = -1
				continue
			case start < 0:
				start = i
				continue
			}
			prev := s[i-1]
			if isLower(prev) && isUpper(c) ||
				isUpper(prev) && isUpper(c) && i+1 < len(s) && isLower(s[i+1]) ||
				isDigit(prev) != isDigit(c) {
				if !yield(start, i) {
					return
				}
				start = i
			}
		}
		if start >= 0 {
			yield(start, len(s))
		}
	}
}

// normalizeKey lower-cases a parameter name and drops everything but ASCII
// letters and digits, so allNamespaces, all-namespaces and ALL_NAMESPACES
// compare equal.
func normalizeKey(s string) string {
	return string(appendNormalizedKey(make([]byte, 0, len(s)), []byte(s)))
}

// appendNormalizedKey appends normalizeKey(s) to dst.
func appendNormalizedKey(dst, s []byte) []byte {
	for _, c := range s {
		if isASCIIAlnum(c) {
			if isUpper(c) {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
	}
	return dst
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func isLower(c byte) bool      { return c >= 'a' && c <= 'z' }
func isUpper(c byte) bool      { return c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }
func isASCIIAlnum(c byte) bool { return isLower(c) || isUpper(c) || isDigit(c) }
