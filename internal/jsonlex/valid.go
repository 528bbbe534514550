package jsonlex

import (
	"encoding/binary"
	"math/bits"
)

// maxDepth is encoding/json's nesting limit: json.Valid refuses a document
// nested deeper.
const maxDepth = 10000

// Valid reports whether data is one valid JSON value, exactly as json.Valid
// does (the same grammar, the same nesting limit, invalid UTF-8 inside
// strings accepted), without json.Valid's per-byte state function calls:
// strings are scanned for their quote, backslash or control byte by a
// table, the structure by a loop over a bit stack, and nothing is
// allocated. FuzzValid compares it with json.Valid.
func Valid(data []byte) bool {
	end := ValidEnd(data, 0, 0)
	return end >= 0 && skipSpace(data, end) == len(data)
}

// ValidEnd checks the one JSON value that starts at data[i] (after any
// space) as Valid does, with outer containers already open around it (they
// count towards the nesting limit), and returns the offset just past it, or
// -1 when it is not valid. What follows the value is not looked at.
func ValidEnd(data []byte, i, outer int) int {
	// objects has a bit set for each open container that is an object.
	var objects [maxDepth/64 + 1]uint64
	depth, limit := 0, maxDepth-outer
	i = skipSpace(data, i)
	for {
		// A value starts at i.
		if i >= len(data) {
			return -1
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if depth >= limit {
				return -1
			}
			if c == '{' {
				objects[depth/64] |= 1 << (depth % 64)
			} else {
				objects[depth/64] &^= 1 << (depth % 64)
			}
			depth++
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				depth--
				i++
				break
			}
			if c == '{' {
				if i = memberName(data, i); i < 0 {
					return -1
				}
			}
			continue
		case c == '"':
			if i = stringValue(data, i); i < 0 {
				return -1
			}
		case c == '-' || c >= '0' && c <= '9':
			if i = number(data, i); i < 0 {
				return -1
			}
		case c == 't':
			if i = literal(data, i, "true"); i < 0 {
				return -1
			}
		case c == 'f':
			if i = literal(data, i, "false"); i < 0 {
				return -1
			}
		case c == 'n':
			if i = literal(data, i, "null"); i < 0 {
				return -1
			}
		default:
			return -1
		}
		// A value ended at i: close containers, or find the next value.
		for {
			if depth == 0 {
				return i
			}
			if i = skipSpace(data, i); i >= len(data) {
				return -1
			}
			object := objects[(depth-1)/64]&(1<<((depth-1)%64)) != 0
			c := data[i]
			if c == ',' {
				i = skipSpace(data, i+1)
				if object {
					if i = memberName(data, i); i < 0 {
						return -1
					}
				}
				break
			}
			if (object && c == '}') || (!object && c == ']') {
				depth--
				i++
				continue
			}
			return -1
		}
	}
}

// SkipSpace returns the offset of the first byte at or after i that is not
// JSON space.
func SkipSpace(data []byte, i int) int {
	return skipSpace(data, i)
}

// memberName reads a member name and its colon at i, and returns where its
// value starts, or -1.
func memberName(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = stringValue(data, i); i < 0 {
		return -1
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipSpace(data, i+1)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

// stringStop marks the bytes that end a run of plain string content: the
// quote, the backslash and the control bytes JSON forbids in a string.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// stringValue reads the string whose quote is at data[i] and returns the
// offset past it, or -1.
func stringValue(data []byte, i int) int {
	i++
	for {
		// Eight bytes at a time while none of them is a quote, a
		// backslash or a control byte; then to the first such byte.
		for i+8 <= len(data) {
			w := binary.LittleEndian.Uint64(data[i:])
			if m := below(w, 0x20) | below(w^(ones*'"'), 1) | below(w^(ones*'\\'), 1); m != 0 {
				// The lowest flagged byte is a stop byte (below only
				// flags a byte above a true one wrongly): go straight
				// to it.
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(data) && !stringStop[data[i]] {
			i++
		}
		if i >= len(data) {
			return -1
		}
		switch data[i] {
		case '"':
			return i + 1
		case '\\':
			if i+1 >= len(data) {
				return -1
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return -1
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return -1
					}
				}
				i += 6
			default:
				return -1
			}
		default: // a control byte
			return -1
		}
	}
}

// ones has a 1 in every byte.
const ones = 0x0101010101010101

// below is non-zero when a byte of w is less than n (n <= 128); it may also
// flag a byte just above one that is, never miss one.
func below(w uint64, n byte) uint64 {
	return (w - ones*uint64(n)) &^ w & (ones * 0x80)
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func isDigit(c byte) bool {
	return c >= '0' && c <= '9'
}

// number reads a number at i: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
// and returns the offset past it, or -1. What follows is the caller's to
// check (a digit after a leading 0 is not a separator, so it fails there).
func number(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data) || !isDigit(data[i]):
		return -1
	case data[i] == '0':
		i++
	default:
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || !isDigit(data[i]) {
			return -1
		}
		for i < len(data) && isDigit(data[i]) {
			i++
		}
	}
	return i
}

// literal reads word (true, false, null) at i and returns the offset past
// it, or -1.
func literal(data []byte, i int, word string) int {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return -1
	}
	return i + len(word)
}
