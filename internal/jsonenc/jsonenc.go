// Package jsonenc owns writing JSON strings by hand exactly as
// encoding/json writes them, for the encoders on hot paths that build JSON
// without reflection (audit records, served events).
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plainText and plainHTML are the bytes AppendString copies as they are
// (without and with HTML escaping), a bit per ASCII byte: from the space
// on, but for the quote and the backslash (and < > &). Constants, so the
// package has no initializer.
var (
	plainText = [2]uint64{0xfffffffb00000000, 0xffffffffefffffff}
	plainHTML = [2]uint64{0xafffffbb00000000, 0xffffffffefffffff}
)

// isPlain reports whether b is in set.
func isPlain(set *[2]uint64, b byte) bool {
	return b < utf8.RuneSelf && set[b>>6]&(1<<(b&63)) != 0
}

// AppendString appends s as a JSON string, byte for byte what
// encoding/json writes: the short escapes \" \\ \b \f \n \r \t, \u00XX for
// other control bytes, \ufffd for each invalid UTF-8 byte, \u2028 and
// \u2029 escaped; with escapeHTML (json.Marshal's default) also < > & as
// \u003c \u003e \u0026, without it (json.Encoder.SetEscapeHTML(false)) as
// themselves.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	plain := &plainText
	if escapeHTML {
		plain = &plainHTML
	}
	i := 0
	for i < len(s) && isPlain(plain, s[i]) {
		i++
	}
	if i == len(s) { // the usual case: nothing to escape
		dst = append(dst, s...)
		return append(dst, '"')
	}
	start := 0
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!escapeHTML || b != '<' && b != '>' && b != '&') {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
