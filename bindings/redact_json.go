package bindings

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// RedactJSON masks registered values inside the JSON document raw, for
// tool results that echo a secret before they reach the model or a log.
// Every string (keys included) is decoded, so any escaping the server
// chose is seen through; a string holding a value is re-encoded with the
// value replaced by RedactedText. A number whose text holds a value, as
// written or as encoding/json writes it once decoded (9.8765432e7 is
// 98765432 to whoever re-encodes it), is replaced by the string
// "[REDACTED]". The result is valid JSON whenever
// raw is. Invalid JSON is redacted as plain text. raw itself is returned,
// unchanged and without allocating, when nothing matches.
func (r *Redactor) RedactJSON(raw json.RawMessage) json.RawMessage {
	st := r.load()
	if st == nil || len(raw) == 0 {
		return raw
	}
	if !st.contains(bytesView(raw)) && !st.numeric {
		// contains sees through every escape, and unescaping a valid
		// document as a whole unescapes each of its strings. (Numbers
		// are looked at one by one when a value could be one.)
		return raw
	}
	if !json.Valid(raw) {
		return r.RedactBytes(raw)
	}
	var out []byte // nil until the first change
	last := 0
	replace := func(start, end int, with []byte) {
		if out == nil {
			out = make([]byte, 0, len(raw)+len(RedactedText))
		}
		out = append(out, raw[last:start]...)
		out = append(out, with...)
		last = end
	}
	for i := 0; i < len(raw); {
		switch c := raw[i]; {
		case c == '"':
			end := stringEnd(raw, i)
			lit := raw[i:end]
			s, ok := unquoteJSON(lit)
			if !ok {
				// Unreachable for valid JSON; fall back to plain text.
				return r.RedactBytes(raw)
			}
			if red, changed := st.redact(s); changed {
				replace(i, end, encodeJSONString(red))
			}
			i = end
		case c == '-' || (c >= '0' && c <= '9'):
			end := i + 1
			for end < len(raw) && strings.IndexByte("+-.eE0123456789", raw[end]) >= 0 {
				end++
			}
			var buf [32]byte
			if num := bytesView(raw[i:end]); st.contains(num) || (st.numeric && st.contains(bytesView(canonicalNumber(buf[:0], num)))) {
				replace(i, end, encodeJSONString(RedactedText))
			}
			i = end
		default:
			i++
		}
	}
	if out == nil {
		return raw
	}
	return append(out, raw[last:]...)
}

// unquoteJSON decodes a string literal (quotes included) of valid JSON.
// Without escapes it returns a view of lit rather than a copy.
func unquoteJSON(lit []byte) (string, bool) {
	body := lit[1 : len(lit)-1]
	i := bytes.IndexByte(body, '\\')
	if i < 0 {
		return bytesView(body), true
	}
	out := make([]byte, 0, len(body))
	out = append(out, body[:i]...)
	for i < len(body) {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		if i+1 >= len(body) {
			return "", false
		}
		switch e := body[i+1]; e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(body, i+2)
			if !ok {
				return "", false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(body, i+2); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", false
		}
		i += 2
	}
	return string(out), true
}

// hex4 reads the four hex digits of a \u escape at s[at:].
func hex4[T string | []byte](s T, at int) (rune, bool) {
	if at+4 > len(s) {
		return 0, false
	}
	var r rune
	for i := at; i < at+4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// stringEnd returns the index just past the string literal starting at
// raw[start] (a '"'), in valid JSON.
func stringEnd(raw []byte, start int) int {
	for i := start + 1; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(raw)
}

func encodeJSONString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// canonicalNumber appends to b how encoding/json writes the float64 of
// the number literal num (nothing when it does not parse).
func canonicalNumber(b []byte, num string) []byte {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return b
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 -> e-9, as encoding/json writes it.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
