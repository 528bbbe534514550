// Package ids is the one normalisation of the ids of people and callers
// (approvers, requesters, the identities of agenthost serve): NormalizeID,
// and SameID to compare two.
package ids

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"golang.org/x/text/secure/precis"
)

// Ids of people and callers (approvers, requesters, the identities of
// agenthost serve) have one normalisation in the whole project, here:
// NormalizeID. Everything that compares two ids (the quorum, the
// self-approval rule, serve's session owners and subjects, the uniqueness
// of serve.identities) compares NormalizeID's answers, or asks SameID.

// ErrInvalidID: the id holds a code point the profile refuses (see
// NormalizeID): an invisible or default-ignorable one, a control
// character, a space other than one U+0020 between two parts, a symbol or
// punctuation outside ASCII, a compatibility form that width mapping does
// not fold, or an unassigned code point.
var ErrInvalidID = errors.New("not a valid id")

// NormalizeID returns the form in which ids are compared, under this
// profile: surrounding white space trimmed; then each part between single
// U+0020 spaces (RFC 8265 section 3.5) prepared and enforced with the
// PRECIS UsernameCaseMapped profile (RFC 8265: fullwidth and halfwidth
// forms mapped to their plain letters, lower-cased, NFC, IdentifierClass
// code points only, the Bidi Rule). "Bob", " bob " and fullwidth "ｂｏｂ" are
// one id, "bob". An id with an invisible or default-ignorable code point
// ("ops" followed by U+034F, U+3164, U+FE0F, U+200B or U+2800), a control
// character, two spaces in a row, a symbol outside ASCII or a compatibility
// ligature is refused with ErrInvalidID, never quietly folded into another
// id. A blank id normalises to "" with no error: it names nobody.
//
// It is for comparing only: votes and audit records keep ids as given.
func NormalizeID(id string) (string, error) {
	if isPlainLowerASCII(id) {
		return id, nil
	}
	id = strings.TrimSpace(id)
	if id == "" {
		return "", nil
	}
	if i := strings.IndexFunc(id, invisible); i >= 0 {
		return "", fmt.Errorf("%w: %q holds the invisible or default-ignorable code point %U", ErrInvalidID, id, []rune(id[i:])[0])
	}
	parts := strings.Split(id, " ")
	for i, part := range parts {
		if part == "" {
			return "", fmt.Errorf("%w: %q has two spaces in a row", ErrInvalidID, id)
		}
		p, err := precis.UsernameCaseMapped.String(part)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", ErrInvalidID, id, err)
		}
		parts[i] = p
	}
	return strings.Join(parts, " "), nil
}

// invisible reports the code points refused before the PRECIS profile even
// looks (it refuses them too; this does not depend on its Unicode
// version): controls, format characters, separators and other spaces
// (U+0020 between parts is split off before), default-ignorable code
// points, variation selectors, and the blank Braille pattern U+2800.
func invisible(r rune) bool {
	return r != ' ' && (unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) || r == '\u2800')
}

// isPlainLowerASCII reports an id that NormalizeID returns unchanged (the
// common case, checked without allocating): printable ASCII other than
// space and capital letters.
func isPlainLowerASCII(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || ('A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

// blank reports an id that names nobody.
func blank(id string) bool { return strings.TrimSpace(id) == "" }

// SameID reports whether two ids may name the same person: both normalise
// to one id (NormalizeID). A blank id names nobody and matches nothing.
// An id that is not valid (ErrInvalidID) may be anyone's: it matches every
// id that is not blank, so each self-approval check that asks SameID
// fails closed.
func SameID(a, b string) bool {
	if blank(a) || blank(b) {
		return false
	}
	na, errA := NormalizeID(a)
	nb, errB := NormalizeID(b)
	return errA != nil || errB != nil || na == nb
}
