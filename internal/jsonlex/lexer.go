package jsonlex

import (
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"
)

// Kind classifies what Lexer.Next read.
type Kind uint8

const (
	End Kind = iota
	ObjectStart
	ObjectEnd
	ArrayStart
	ArrayEnd
	Key    // an object member name; raw is the quoted string
	String // a string value; raw is the quoted string
	Scalar // a number, true, false or null; raw is the literal
)

// Lexer walks a document that json.Valid has already accepted, without
// recursion and without the per-token allocations of json.Decoder.Token
// (which made the guard and the schema scans several times slower). Because
// the input is valid, separators can simply be skipped, and a string is a
// member name exactly when a colon follows it. It must only be given
// valid JSON.
type Lexer struct {
	data []byte
	pos  int
	// plain: the last string or key read has no escape and only ASCII.
	plain bool
}

// New returns a Lexer at the start of data.
func New(data []byte) Lexer {
	return Lexer{data: data}
}

// Pos is the offset in the document just past the last token read (or
// past the separators ValueStart skipped).
func (l *Lexer) Pos() int {
	return l.pos
}

// Next returns the next token and its raw bytes (with quotes, for strings
// and keys); text is decoded only on request (Unquote), since most values
// are never looked at.
func (l *Lexer) Next() (Kind, []byte) {
	for l.pos < len(l.data) {
		c := l.data[l.pos]
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':':
			l.pos++
			continue
		case '{':
			l.pos++
			return ObjectStart, nil
		case '}':
			l.pos++
			return ObjectEnd, nil
		case '[':
			l.pos++
			return ArrayStart, nil
		case ']':
			l.pos++
			return ArrayEnd, nil
		case '"':
			return l.str()
		default:
			start := l.pos
			for l.pos < len(l.data) && !endsScalar(l.data[l.pos]) {
				l.pos++
			}
			return Scalar, l.data[start:l.pos]
		}
	}
	return End, nil
}

func (l *Lexer) str() (Kind, []byte) {
	start := l.pos
	l.pos, l.plain = stringScan(l.data, start)
	raw := l.data[start:l.pos]
	i := l.pos
	for i < len(l.data) && isSpace(l.data[i]) {
		i++
	}
	if i < len(l.data) && l.data[i] == ':' {
		return Key, raw
	}
	return String, raw
}

// Plain reports whether the last Key or String token Next returned is
// PlainString, which the lexer learnt while it looked for the string's end
// (FuzzTokens compares the two).
func (l *Lexer) Plain() bool {
	return l.plain
}

// PlainString reports whether a raw JSON string has no escapes and only
// ASCII, so its text is the bytes between the quotes.
func PlainString(raw []byte) bool {
	for _, c := range raw[1 : len(raw)-1] {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Unquote decodes a raw JSON string the way encoding/json does (escapes,
// invalid UTF-8 mapped to U+FFFD).
func Unquote(raw []byte) string {
	if PlainString(raw) {
		return string(raw[1 : len(raw)-1])
	}
	var text string
	_ = json.Unmarshal(raw, &text) // raw came from a document json.Valid accepted
	return text
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

func endsScalar(c byte) bool {
	return isSpace(c) || c == ',' || c == ']' || c == '}'
}

// ValueStart skips separators and returns where the next value begins.
func (l *Lexer) ValueStart() int {
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

// stringEnd returns the offset just past the string whose opening quote
// is at data[start] (see stringScan).
func stringEnd(data []byte, start int) int {
	end, _ := stringScan(data, start)
	return end
}

// stringScan returns the offset just past the string whose opening quote
// is at data[start]: past the first quote after it that no backslash
// escapes, and whether the string is PlainString. It reads eight bytes at a
// time while none is a quote or a backslash (most of a definition's
// strings are short names and words, for which a bytes.IndexByte call per
// string cost more than the scan), and steps over each backslash with the
// byte it escapes, which for any input finds the quote the old backward
// count of backslashes found (FuzzStringScan). An unterminated string
// (invalid input) ends at len(data), and is not plain.
func stringScan(data []byte, start int) (end int, plain bool) {
	i := start + 1
	var high uint64 // the high bits of the bytes read in words
	for {
		for i+8 <= len(data) {
			w := binary.LittleEndian.Uint64(data[i:])
			m := below(w^(ones*'"'), 1) | below(w^(ones*'\\'), 1)
			if m == 0 {
				high |= w
				i += 8
				continue
			}
			// The lowest flagged byte is a quote or a backslash (below
			// only ever flags a byte above a true one wrongly).
			n := bits.TrailingZeros64(m) / 8
			high |= w & (1<<(8*n) - 1)
			i += n
			break
		}
		for i < len(data) && data[i] != '"' && data[i] != '\\' {
			high |= uint64(data[i])
			i++
		}
		if i >= len(data) {
			return len(data), false
		}
		if data[i] == '"' {
			return i + 1, high&(ones*0x80) == 0
		}
		// A backslash: the string is not plain; skip the escaped byte.
		high |= 0x80
		if i += 2; i > len(data) {
			return len(data), false
		}
	}
}

// SkipValue moves past one whole value (of a valid document). An object or
// an array is skipped by matching its brackets outside strings, without
// reading its tokens.
func (l *Lexer) SkipValue() {
	if start := l.ValueStart(); start < len(l.data) && (l.data[start] == '{' || l.data[start] == '[') {
		l.pos = containerEnd(l.data, start)
		return
	}
	depth := 0
	for {
		kind, _ := l.Next()
		switch kind {
		case ObjectStart, ArrayStart:
			depth++
		case ObjectEnd, ArrayEnd:
			depth--
		case End:
			return
		case Key:
			continue
		}
		if depth <= 0 {
			return
		}
	}
}

// containerEnd returns the offset just past the object or array that
// opens at data[start]; for unbalanced (invalid) input, len(data).
func containerEnd(data []byte, start int) int {
	depth := 0
	for i := start; i < len(data); i++ {
		for i < len(data) && !structural[data[i]] {
			i++
		}
		if i >= len(data) {
			break
		}
		switch data[i] {
		case '"':
			i = stringEnd(data, i) - 1
		case '{', '[':
			depth++
		default: // '}', ']'
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(data)
}

// structural marks the bytes containerEnd stops at.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}
