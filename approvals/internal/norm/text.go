package norm

import (
	"iter"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// StripControl drops control and format characters (including bidi
// overrides and zero-width characters) and invalid UTF-8, so text from
// servers, models or approvers cannot steer a terminal or hide content.
func StripControl(s string) string {
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

// OneLine strips control characters, turns any run of whitespace into one
// space and caps the result at max runes (marking a cut with "…").
func OneLine(s string, max int) string {
	s = strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		return r
	}, s)), " ")
	s = StripControl(s)
	if max > 0 && utf8.RuneCountInString(s) > max {
		r := []rune(s)
		s = strings.TrimSpace(string(r[:max-1])) + "…"
	}
	return s
}

func SortStrings(s []string) { sort.Strings(s) }

// SplitTokens splits an identifier into lower-case words: at any character
// that is not an ASCII letter or digit (so at _ - . / and spaces), at
// camelCase boundaries ("deleteUser", "HTTPServer") and between letters and
// digits (tokenBounds).
func SplitTokens(s string) []string {
	var tokens []string
	for start, end := range TokenBounds([]byte(s)) {
		tokens = append(tokens, strings.ToLower(s[start:end]))
	}
	return tokens
}

// TokenBounds yields the start and end of each word of an identifier, as
// splitTokens splits it.
func TokenBounds(s []byte) iter.Seq2[int, int] {
	return func(yield func(int, int) bool) {
		start := -1
		for i, c := range s {
			switch {
			case !IsASCIIAlnum(c):
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
			if IsLower(prev) && IsUpper(c) ||
				IsUpper(prev) && IsUpper(c) && i+1 < len(s) && IsLower(s[i+1]) ||
				IsDigit(prev) != IsDigit(c) {
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

// NormalizeKey lower-cases a parameter name and drops everything but ASCII
// letters and digits, so allNamespaces, all-namespaces and ALL_NAMESPACES
// compare equal.
func NormalizeKey(s string) string {
	return string(AppendNormalizedKey(make([]byte, 0, len(s)), []byte(s)))
}

// AppendNormalizedKey appends normalizeKey(s) to dst.
func AppendNormalizedKey(dst, s []byte) []byte {
	for _, c := range s {
		if IsASCIIAlnum(c) {
			if IsUpper(c) {
				c += 'a' - 'A'
			}
			dst = append(dst, c)
		}
	}
	return dst
}

func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func IsLower(c byte) bool      { return c >= 'a' && c <= 'z' }
func IsUpper(c byte) bool      { return c >= 'A' && c <= 'Z' }
func IsDigit(c byte) bool      { return c >= '0' && c <= '9' }
func IsASCIIAlnum(c byte) bool { return IsLower(c) || IsUpper(c) || IsDigit(c) }
