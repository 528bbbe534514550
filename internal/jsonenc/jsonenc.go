// Package jsonenc owns writing JSON strings by hand exactly as
// encoding/json writes them, for the encoders on hot paths that build JSON
// without reflection (audit records, served events).
package jsonenc

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// plainText and plainHTML are the bytes AppendString copies as they are
// (without and with HTML escaping), a bit per byte: from the space up to
// 0x7f, but for the quote and the backslash (and < > &); no byte from 0x80
// on (UTF-8 is checked rune by rune). Four words, so that any byte indexes
// them without a bounds check or a branch; constants, so the package has
// no initializer.
var (
	plainText = [4]uint64{0xfffffffb00000000, 0xffffffffefffffff}
	plainHTML = [4]uint64{0xafffffbb00000000, 0xffffffffefffffff}
)

// isPlain reports whether b is in set.
func isPlain(set *[4]uint64, b byte) bool {
	return set[b>>6]>>(b&63)&1 != 0
}

// SWAR (eight bytes in one word) constants of plainPrefix.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// hasByte is non-zero when a byte of x is c (exact: the borrows of
// the subtraction only reach bytes above one that is c).
func hasByte(x uint64, c byte) uint64 {
	y := x ^ (lsbs * uint64(c))
	return (y - lsbs) &^ y & msbs
}

// plainPrefix is the length of the longest prefix of s that AppendString
// copies as it is: eight bytes at a time while a whole word is plain (no
// control byte, no byte from 0x80 on, no quote or backslash, with html
// no < > &), then byte by byte.
func plainPrefix(s string, html bool) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte below 0x20 (the subtraction sets its top bit, which
		// &^x keeps only for bytes below 0x80), one from 0x80 on, a
		// quote, a backslash.
		bad := (x-lsbs*0x20)&^x&msbs | x&msbs | hasByte(x, '"') | hasByte(x, '\\')
		if html {
			bad |= hasByte(x, '<') | hasByte(x, '>') | hasByte(x, '&')
		}
		if bad != 0 {
			break
		}
	}
	set := &plainText
	if html {
		set = &plainHTML
	}
	for i < len(s) && isPlain(set, s[i]) {
		i++
	}
	return i
}

// AppendString appends s as a JSON string, byte for byte what
// encoding/json writes: the short escapes \" \\ \b \f \n \r \t, \u00XX for
// other control bytes, \ufffd for each invalid UTF-8 byte, \u2028 and
// \u2029 escaped; with escapeHTML (json.Marshal's default) also < > & as
// \u003c \u003e \u0026, without it (json.Encoder.SetEscapeHTML(false)) as
// themselves.
func AppendString(dst []byte, s string, escapeHTML bool) []byte {
	dst = append(dst, '"')
	i := plainPrefix(s, escapeHTML)
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
