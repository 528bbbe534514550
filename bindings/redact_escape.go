package bindings

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxEscapedLen is the most bytes one byte of a value takes in a JSON
// spelling (\u0061 for "a"; a 4-byte character is a 12-byte surrogate
// pair). RedactingWriter holds back this much of an overlong line.
const maxEscapedLen = 6

// maxUnescapeDepth bounds how many nested JSON encodings (a JSON document
// in a JSON string in a JSON string...) are seen through.
const maxUnescapeDepth = 4

// needsUnescape reports whether s has an escape that can spell a value
// differently from the registered spellings: \u, \/, \b, \f (any
// character has several spellings with them) or an escaped backslash (a
// nested encoding). With only \" \n \r \t left, every character has one
// spelling in a JSON string, and the registered spellings cover it.
func needsUnescape(s string) bool {
	for i := strings.IndexByte(s, '\\'); i >= 0 && i+1 < len(s); {
		switch s[i+1] {
		case 'u', '/', 'b', 'f', '\\':
			return true
		}
		next := strings.IndexByte(s[i+2:], '\\')
		if next < 0 {
			return false
		}
		i += 2 + next
	}
	return false
}

// unescape decodes the JSON string escapes in s, leniently: s need not be
// a JSON string body (text holding JSON, or no JSON at all), and a
// backslash that starts no valid escape stays as it is. With mapped, it
// also returns, for each byte of the result, where the escape (or literal
// byte) that produced it starts and ends in s.
func unescape(s string, mapped bool) (string, []int32, []int32) {
	out := make([]byte, 0, len(s))
	var starts, ends []int32
	if mapped {
		starts = make([]int32, 0, len(s))
		ends = make([]int32, 0, len(s))
	}
	emit := func(from, to int, b ...byte) {
		out = append(out, b...)
		if mapped {
			for range b {
				starts = append(starts, int32(from))
				ends = append(ends, int32(to))
			}
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			emit(i, i+1, c)
			i++
			continue
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			emit(i, i+2, e)
			i += 2
		case 'b':
			emit(i, i+2, '\b')
			i += 2
		case 'f':
			emit(i, i+2, '\f')
			i += 2
		case 'n':
			emit(i, i+2, '\n')
			i += 2
		case 'r':
			emit(i, i+2, '\r')
			i += 2
		case 't':
			emit(i, i+2, '\t')
			i += 2
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				emit(i, i+1, c)
				i++
				continue
			}
			end := i + 6
			if utf16.IsSurrogate(r) {
				dec := utf8.RuneError
				if end+1 < len(s) && s[end] == '\\' && s[end+1] == 'u' {
					if r2, ok := hex4(s, end+2); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dec = d
							end += 6
						}
					}
				}
				r = dec
			}
			emit(i, end, utf8.AppendRune(nil, r)...)
			i = end
		default:
			emit(i, i+1, c)
			i++
		}
	}
	return string(out), starts, ends
}

// escapedDepth returns how many rounds of unescaping of s reveal a
// registered value (0: none does, up to maxUnescapeDepth).
func (st *redactState) escapedDepth(s string) int {
	for depth := 1; depth <= maxUnescapeDepth && needsUnescape(s); depth++ {
		s, _, _ = unescape(s, false)
		if st.containsRaw(s) {
			return depth
		}
	}
	return 0
}

// findEscaped appends the spans of s that spell a registered value with
// escapes: s is unescaped (again, for nested encodings) until a value
// shows, and the spans found there are mapped back onto s. Unescaping
// allocates, so it runs only for text with escapes that need it, and the
// offsets are only tracked once a value is known to be there.
func (st *redactState) findEscaped(s string, out []span) []span {
	depth := st.escapedDepth(s)
	if depth == 0 {
		return out
	}
	// starts/ends map bytes of the current text onto s.
	text := s
	var starts, ends []int32
	for d := 0; d < depth; d++ {
		next, ns, ne := unescape(text, true)
		if d > 0 {
			for i := range ns {
				ns[i], ne[i] = starts[ns[i]], ends[ne[i]-1]
			}
		}
		text, starts, ends = next, ns, ne
		for _, sp := range st.findRaw(text, nil) {
			out = append(out, span{int(starts[sp.start]), int(ends[sp.end-1])})
		}
	}
	return out
}

// contains reports whether s holds a registered value in any spelling.
func (st *redactState) contains(s string) bool {
	return st.containsRaw(s) || (needsUnescape(s) && st.escapedDepth(s) > 0)
}

func (st *redactState) containsRaw(s string) bool {
	if st.filter != nil {
		return st.filter.any(s, st.patterns)
	}
	for _, p := range st.patterns {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
