package secureparams

import (
	"encoding/json"
	"unicode/utf8"
)

// tokenKind classifies what lexer.next read.
type tokenKind uint8

const (
	tokenEnd tokenKind = iota
	tokenObjectStart
	tokenObjectEnd
	tokenArrayStart
	tokenArrayEnd
	tokenKey    // an object member name; text is decoded
	tokenString // a string value; text is decoded
	tokenScalar // a number, true, false or null; text is raw
)

// lexer walks a document that json.Valid has already accepted, without
// recursion and without the per-token allocations of json.Decoder.Token
// (which made the guard and the schema scans several times slower). Because
// the input is valid, separators can simply be skipped, and a string is a
// member name exactly when a colon follows it.
type lexer struct {
	data []byte
	pos  int
}

// next returns the next token and its raw bytes (with quotes, for strings
// and keys); text is decoded only on request, since most values are never
// looked at.
func (l *lexer) next() (tokenKind, []byte) {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':':
			l.pos++
			continue
		case '{':
			l.pos++
			return tokenObjectStart, nil
		case '}':
			l.pos++
			return tokenObjectEnd, nil
		case '[':
			l.pos++
			return tokenArrayStart, nil
		case ']':
			l.pos++
			return tokenArrayEnd, nil
		case '"':
			return l.str()
		default:
			start := l.pos
			for l.pos < len(l.data) && !endsScalar(l.data[l.pos]) {
				l.pos++
			}
			return tokenScalar, l.data[start:l.pos]
		}
	}
	return tokenEnd, nil
}

func (l *lexer) str() (tokenKind, []byte) {
	start := l.pos
	l.pos++
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		if c == '\\' {
			l.pos += 2
			continue
		}
		l.pos++
		if c == '"' {
			break
		}
	}
	raw := l.data[start:l.pos]
	i := l.pos
	for i < len(l.data) && isJSONSpace(l.data[i]) {
		i++
	}
	if i < len(l.data) && l.data[i] == ':' {
		return tokenKey, raw
	}
	return tokenString, raw
}

// plainString reports whether a raw JSON string has no escapes and only
// ASCII, so its text is the bytes between the quotes.
func plainString(raw []byte) bool {
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// unquote decodes a raw JSON string the way encoding/json does (escapes,
// invalid UTF-8 mapped to U+FFFD).
func unquote(raw []byte) string {
	if plainString(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var text string
	_ = json.Unmarshal(raw, &text) // raw came from a document json.Valid accepted
	return text
}

func isJSONSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func endsScalar(c byte) bool {
	return isJSONSpace(c) || c == ',' || c == ']' || c == '}'
}

// valueStart skips separators and returns where the next value begins.
func (l *lexer) valueStart() int {
	for l.pos < len(l.data) {
		switch l.data[l.pos] {
		case ' ', '\t', '\n', '\r', ',', ':':
			l.pos++
		default:
			return l.pos
		}
	}
	return l.pos
}

// skipValue moves past one whole value (of a valid document).
func (l *lexer) skipValue() {
	depth := 0
	for {
		kind, _ := l.next()
		switch kind {
		case tokenObjectStart, tokenArrayStart:
			depth++
		case tokenObjectEnd, tokenArrayEnd:
			depth--
		case tokenEnd:
			return
		case tokenKey:
			continue
		}
		if depth <= 0 {
			return
		}
	}
}
