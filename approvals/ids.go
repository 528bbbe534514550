package approvals

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// folder is safe for concurrent use: cases.Fold keeps no state between
// String calls.
var folder = cases.Fold()

// normalizeID is the form of an approver or requester id used to compare
// ids: Unicode format characters (category Cf: zero-width spaces and
// joiners, bidi marks) removed, NFKC (fullwidth and compatibility forms
// become their plain letters), case folded, NFKC again, surrounding space
// trimmed. "Bob", "bob\u200b" and fullwidth "ｂｏｂ" are one approver. It is
// for counting distinct approvers and the self-approval check only: votes
// and audit records keep the id as given. An id that normalises to "" names
// nobody.
func normalizeID(id string) string {
	if isPlainLowerASCII(id) {
		return id
	}
	id = strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, id)
	id = norm.NFKC.String(folder.String(norm.NFKC.String(id)))
	return strings.TrimSpace(id)
}

// isPlainLowerASCII reports an id that normalizeID would return unchanged
// (the common case, checked without allocating).
func isPlainLowerASCII(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// SameID reports whether two ids name the same person (compared with format
// characters removed, NFKC-normalised and case folded).
// Empty ids name nobody and match nothing.
func SameID(a, b string) bool {
	na, nb := normalizeID(a), normalizeID(b)
	return na != "" && na == nb
}
