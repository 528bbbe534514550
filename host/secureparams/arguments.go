package secureparams

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// MaxArgumentDepth bounds how deeply the model's arguments may nest. Deeper
// arguments are treated as naming every secure parameter: the guard would
// rather refuse a strange call than let one through unread.
const MaxArgumentDepth = 64

// ErrSecureNameInArguments means the model's arguments use the name of a
// secure parameter. Its text names no field: the model may see it.
var ErrSecureNameInArguments = errors.New("invalid arguments: a parameter name is reserved for the host")

// ErrArgumentsNotJSON means the model's arguments are not valid JSON.
var ErrArgumentsNotJSON = errors.New("invalid arguments: not valid JSON")

// SecureNameError is returned by CheckArguments when the arguments use
// secure parameter names. Error() names none of them, so it can go back to
// the model; Names is for the audit record, which must note a possible
// prompt injection.
type SecureNameError struct {
	// Names are the matched secure parameter names, sorted.
	Names []string
	// DepthExceeded is set when the arguments nested deeper than
	// MaxArgumentDepth; Names then lists every secure parameter.
	DepthExceeded bool
}

func (e *SecureNameError) Error() string { return ErrSecureNameInArguments.Error() }

// Unwrap lets errors.Is match ErrSecureNameInArguments.
func (e *SecureNameError) Unwrap() error { return ErrSecureNameInArguments }

// FindSecureNames returns the secure names (sorted, without duplicates)
// that appear as an object key anywhere in args, at any depth and inside
// arrays. Keys match a secure name ignoring case (Unicode simple folding),
// compatibility forms (full-width letters, ligatures), combining marks,
// invisible format characters, and separators (dashes, underscores,
// spaces): "Tenant-ID" matches "tenant_id". String values never match.
//
// It fails closed: when args is not valid JSON or nests deeper than
// MaxArgumentDepth it returns every secure name. Use CheckArguments to tell
// those cases apart. Empty args mean no arguments.
func FindSecureNames(args json.RawMessage, secure []string) []string {
	found, tooDeep, err := findSecureNames(args, secure)
	if err != nil || tooDeep {
		return sortedUnique(secure)
	}
	return found
}

// CheckArguments is the call-time guard: nil when args use no secure name,
// a *SecureNameError (errors.Is ErrSecureNameInArguments) when they do or
// nest too deeply, or an error wrapping ErrArgumentsNotJSON.
func CheckArguments(args json.RawMessage, secure []string) error {
	found, tooDeep, err := findSecureNames(args, secure)
	if err != nil {
		return err
	}
	if tooDeep {
		return &SecureNameError{Names: sortedUnique(secure), DepthExceeded: true}
	}
	if len(found) > 0 {
		return &SecureNameError{Names: found}
	}
	return nil
}

// findSecureNames validates args, then scans them without recursion, so
// hostile nesting costs only a counter.
func findSecureNames(args json.RawMessage, secure []string) (found []string, tooDeep bool, err error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, false, nil
	}
	if !json.Valid(args) {
		var v any
		err := json.Unmarshal(args, &v)
		return nil, false, fmt.Errorf("%w: %v", ErrArgumentsNotJSON, err)
	}
	targets := make([]secureTarget, len(secure))
	for i, s := range secure {
		targets[i] = newSecureTarget(s)
	}
	matched := make([]bool, len(secure))
	depth := 0
	lx := lexer{data: args}
	for kind, raw := lx.next(); kind != tokenEnd; kind, raw = lx.next() {
		switch kind {
		case tokenObjectStart, tokenArrayStart:
			depth++
			if depth > MaxArgumentDepth {
				return nil, true, nil
			}
		case tokenObjectEnd, tokenArrayEnd:
			depth--
		case tokenKey:
			plain := plainString(raw)
			var key string
			if !plain {
				key = unquote(raw)
			}
			for i := range targets {
				if matched[i] {
					continue
				}
				if plain && targets[i].asciiFolded != "" {
					matched[i] = asciiEquivalent(raw[1:len(raw)-1], targets[i].asciiFolded)
				} else {
					if plain {
						key = string(raw[1 : len(raw)-1])
					}
					matched[i] = keyMatches(key, targets[i].name, targets[i].normalised)
				}
			}
		}
	}
	for i, s := range secure {
		if matched[i] {
			found = append(found, s)
		}
	}
	return sortedUnique(found), false, nil
}

// secureTarget is a secure name prepared for matching many keys.
type secureTarget struct {
	name       string
	normalised string
	// asciiFolded is the normalised name lower-cased when it is non-empty
	// ASCII. Simple case folding joins ASCII letters only with U+212A and
	// U+017F, which NFKD has already turned into ASCII, so an ASCII key can
	// be compared byte by byte against it.
	asciiFolded string
}

func newSecureTarget(name string) secureTarget {
	t := secureTarget{name: name, normalised: normaliseName(name)}
	if t.normalised != "" && isPlainASCII(t.normalised) {
		t.asciiFolded = strings.ToLower(t.normalised)
	}
	return t
}

// asciiEquivalent compares an ASCII key with a folded ASCII target the way
// normaliseName followed by strings.EqualFold would, without allocating.
func asciiEquivalent(key []byte, folded string) bool {
	j := 0
	for _, c := range key {
		switch c {
		case '-', '_', ' ', '\t', '\n', '\r', '\f', '\v':
			continue
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if j >= len(folded) || folded[j] != c {
			return false
		}
		j++
	}
	return j == len(folded)
}

func keyMatches(key, secure, normalisedSecure string) bool {
	if key == secure {
		return true
	}
	nk := normaliseName(key)
	if nk == "" || normalisedSecure == "" {
		return strings.EqualFold(key, secure)
	}
	return strings.EqualFold(nk, normalisedSecure)
}

// equivalentNames reports whether two names are the same to the guard.
func equivalentNames(a, b string) bool {
	return keyMatches(a, b, normaliseName(b))
}

// normaliseName reduces a name to the form the guard compares (with
// strings.EqualFold): compatibility-decomposed (NFKD, so "ｔｅｎａｎｔ" and
// "ﬁ" become ASCII), without combining marks, separators (dashes,
// connector punctuation, spaces) or invisible format characters, with the
// dotless and dotted I folded to i (Unicode simple folding leaves them
// apart from i, so EqualFold alone would miss them).
func normaliseName(s string) string {
	if isPlainASCII(s) {
		var b strings.Builder
		b.Grow(len(s))
		for i := 0; i < len(s); i++ {
			switch c := s[i]; c {
			case '-', '_', ' ', '\t', '\n', '\r', '\f', '\v':
			default:
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		switch {
		case r == 'ı' || r == 'İ':
			b.WriteByte('i')
		case r == utf8.RuneError,
			unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r),
			unicode.Is(unicode.Pd, r), unicode.Is(unicode.Pc, r),
			unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r),
			unicode.IsSpace(r), unicode.Is(unicode.Zs, r),
			unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r),
			unicode.Is(unicode.Variation_Selector, r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isPlainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Word pieces and stems that make a parameter name look like a credential.
var (
	secretWords = []string{"key", "pat", "pwd", "pin", "otp", "jwt", "sig", "pass", "auth", "authn"}
	secretStems = []string{
		"token", "secret", "password", "passwd", "passphrase", "credential", "authoriz",
		"apikey", "bearer", "cookie", "privatekey", "signature",
	}
)

// looksSecret is a heuristic for names like session_token, apiKey or
// X-Auth: a stem anywhere, or a short word as a whole word (so "key" in
// "api-key" but not in "monkey").
func looksSecret(name string) bool {
	lower := strings.ToLower(normaliseName(name))
	for _, stem := range secretStems {
		if strings.Contains(lower, stem) {
			return true
		}
	}
	for _, word := range splitWords(name) {
		if slices.Contains(secretWords, word) {
			return true
		}
	}
	return false
}

// splitWords splits a name on separators and lower-to-upper case changes,
// lower-casing the pieces: "apiKey-ID" → api, key, id.
func splitWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			prevLower = false
			continue
		case unicode.IsUpper(r) && prevLower:
			flush()
		}
		cur = append(cur, r)
		prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
	}
	flush()
	return words
}
