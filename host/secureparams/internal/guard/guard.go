// Package guard owns the call-time guard over the model's arguments (a
// secure parameter name at any depth, in any spelling the host folds
// together, invalid JSON, repeated keys, hostile nesting) and the name
// rules it shares with the list-time checks: normalised names, variants,
// names that look like credentials.
package guard

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

	"github.com/agenthost/agenthost/internal/jsonlex"
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

// ErrDuplicateKeyInArguments means an object in the model's arguments
// repeats a member name (at any depth). Servers disagree on which of the
// values wins, and the audit record could not say which one was meant, so
// such arguments are refused. Its text names no key: the model may see it.
var ErrDuplicateKeyInArguments = errors.New("invalid arguments: an object repeats a key (duplicate key)")

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
	found, tooDeep, _, err := findSecureNames(args, Targets(secure), false)
	if err != nil || tooDeep {
		return SortedUnique(secure)
	}
	return found
}

// CheckArguments is the call-time guard, one pass over args: nil when they
// are fine; an error wrapping ErrArgumentsNotJSON when they are not JSON; a
// *SecureNameError (errors.Is ErrSecureNameInArguments) when they use a
// secure name or nest too deeply; otherwise ErrDuplicateKeyInArguments when
// an object repeats a key. A secure name outranks a repeated key: it is the
// possible prompt injection the audit record must show.
func CheckArguments(args json.RawMessage, secure []string) error {
	return Check(args, secure, Targets(secure))
}

// Check is CheckArguments with secure prepared as targets.
func Check(args json.RawMessage, secure []string, targets []Target) error {
	return check(args, secure, targets, false)
}

// CheckValid is Check for args the caller already found valid JSON, as
// json.Valid(args) decides it (leading and trailing bytes included): they
// are not validated again. Arguments that are not valid JSON must go to
// Check, which says so.
func CheckValid(args json.RawMessage, secure []string, targets []Target) error {
	return check(args, secure, targets, true)
}

func check(args json.RawMessage, secure []string, targets []Target, valid bool) error {
	found, tooDeep, dup, err := findSecureNames(args, targets, valid)
	if err != nil {
		return err
	}
	if tooDeep {
		return &SecureNameError{Names: SortedUnique(secure), DepthExceeded: true}
	}
	if len(found) > 0 {
		return &SecureNameError{Names: found}
	}
	if dup {
		return ErrDuplicateKeyInArguments
	}
	return nil
}

// findSecureNames validates args (unless valid says json.Valid(args)
// already holds), then scans them without recursion, so hostile nesting
// costs only a counter. The same pass notes whether an object repeats a key
// (dup), so the call path reads the arguments once.
func findSecureNames(args json.RawMessage, targets []Target, valid bool) (found []string, tooDeep, dup bool, err error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, false, false, nil
	}
	if !valid && !json.Valid(args) {
		var v any
		err := json.Unmarshal(args, &v)
		return nil, false, false, fmt.Errorf("%w: %v", ErrArgumentsNotJSON, err)
	}
	var (
		matchedBuf [16]bool // tools declare a handful of secure names
		matched    []bool
	)
	if len(targets) <= len(matchedBuf) {
		matched = matchedBuf[:len(targets)]
	} else {
		matched = make([]bool, len(targets))
	}
	// Repeated keys: the raw names of the open objects, innermost last,
	// compared in a flat list (objects usually have a handful of keys); an
	// object with many keys moves its names into a set.
	var (
		openBuf  [16]int32 // per open container: its first name in names, or -1 (array)
		namesBuf [32][]byte
		sets     map[int]map[string]struct{} // by index in open
	)
	open, names := openBuf[:0], namesBuf[:0]
	lx := jsonlex.New(args)
	for kind, raw := lx.Next(); kind != jsonlex.End; kind, raw = lx.Next() {
		switch kind {
		case jsonlex.ObjectStart, jsonlex.ArrayStart:
			if len(open) >= MaxArgumentDepth {
				return nil, true, false, nil
			}
			first := int32(-1)
			if kind == jsonlex.ObjectStart {
				first = int32(len(names))
			}
			open = append(open, first)
		case jsonlex.ObjectEnd, jsonlex.ArrayEnd:
			top := len(open) - 1
			if first := open[top]; first >= 0 {
				clear(names[first:])
				names = names[:first]
				delete(sets, top)
			}
			open = open[:top]
		case jsonlex.Key:
			plain := jsonlex.PlainString(raw)
			var key string
			if !plain {
				key = jsonlex.Unquote(raw)
			}
			if top := len(open) - 1; !dup && top >= 0 {
				if set, ok := sets[top]; ok {
					name := key
					if plain {
						name = string(raw[1 : len(raw)-1])
					}
					_, dup = set[name]
					set[name] = struct{}{}
				} else {
					first := open[top]
					for _, prev := range names[first:] {
						if sameKey(prev, raw) {
							dup = true
						}
					}
					names = append(names, raw)
					if len(names)-int(first) >= ManyKeys {
						set := make(map[string]struct{}, 2*ManyKeys)
						for _, prev := range names[first:] {
							set[jsonlex.Unquote(prev)] = struct{}{}
						}
						clear(names[first:])
						names = names[:first]
						if sets == nil {
							sets = map[int]map[string]struct{}{}
						}
						sets[top] = set
					}
				}
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
	for i := range targets {
		if matched[i] {
			found = append(found, targets[i].name)
		}
	}
	return SortedUnique(found), false, dup, nil
}

// ManyKeys is the member count from which the guard keeps an object's
// names in a set rather than a list.
const ManyKeys = 32

// sameKey reports whether two raw JSON strings decode to the same text.
func sameKey(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	if jsonlex.PlainString(a) && jsonlex.PlainString(b) {
		return false
	}
	return jsonlex.Unquote(a) == jsonlex.Unquote(b)
}

// Target is a secure name prepared for matching many keys.
type Target struct {
	name       string
	normalised string
	// asciiFolded is the normalised name lower-cased when it is non-empty
	// ASCII. Simple case folding joins ASCII letters only with U+212A and
	// U+017F, which NFKD has already turned into ASCII, so an ASCII key can
	// be compared byte by byte against it.
	asciiFolded string
}

// Targets prepares secure names for matching, in their order.
func Targets(secure []string) []Target {
	targets := make([]Target, len(secure))
	for i, s := range secure {
		targets[i] = newTarget(s)
	}
	return targets
}

func newTarget(name string) Target {
	t := Target{name: name, normalised: NormaliseName(name)}
	if t.normalised != "" && IsPlainASCII(t.normalised) {
		t.asciiFolded = strings.ToLower(t.normalised)
	}
	return t
}

// asciiEquivalent compares an ASCII key with a folded ASCII target the way
// NormaliseName followed by strings.EqualFold would, without allocating.
func asciiEquivalent[K string | []byte](key K, folded string) bool {
	j := 0
	for i := 0; i < len(key); i++ {
		c := key[i]
		if asciiIgnored[c&0x7f] {
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

// Matches reports whether key is the target's name to the guard (the
// name itself or an equivalent spelling), without allocating when both are
// ASCII.
func (t Target) Matches(key string) bool {
	if key == t.name {
		return true
	}
	if t.asciiFolded != "" && IsPlainASCII(key) {
		return asciiEquivalent(key, t.asciiFolded)
	}
	return keyMatches(key, t.name, t.normalised)
}

func keyMatches(key, secure, normalisedSecure string) bool {
	if key == secure {
		return true
	}
	return normalisedMatch(key, NormaliseName(key), secure, normalisedSecure)
}

// normalisedMatch is keyMatches for two different names whose normalised
// forms (NormaliseName) are known.
func normalisedMatch(key, nk, secure, normalisedSecure string) bool {
	if nk == "" || normalisedSecure == "" {
		return strings.EqualFold(key, secure)
	}
	return strings.EqualFold(nk, normalisedSecure)
}

// EquivalentNames reports whether two names are the same to the guard.
func EquivalentNames(a, b string) bool {
	return keyMatches(a, b, NormaliseName(b))
}

// NormaliseName reduces a name to the form the guard compares (with
// strings.EqualFold): compatibility-decomposed (NFKD, so "ｔｅｎａｎｔ" and
// "ﬁ" become ASCII), without the characters ignoredInName drops
// (combining marks, separators, controls, invisible format characters),
// with the dotless and dotted I folded to i (Unicode simple folding leaves
// them apart from i, so EqualFold alone would miss them). ASCII names take
// a byte loop that drops exactly what the general path drops (asciiIgnored
// is built from ignoredInName).
func NormaliseName(s string) string {
	if IsPlainASCII(s) {
		var b strings.Builder
		b.Grow(len(s))
		for i := 0; i < len(s); i++ {
			if c := s[i]; !asciiIgnored[c] {
				b.WriteByte(c)
			}
		}
		return b.String()
	}
	return NormaliseUnicode(s)
}

// NormaliseUnicode is NormaliseName for any text; NormaliseName's ASCII
// loop must give the same result for ASCII text (a fuzz test checks it).
func NormaliseUnicode(s string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(s) {
		switch {
		case r == 'ı' || r == 'İ':
			b.WriteByte('i')
		case ignoredInName(r):
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// ignoredInName reports whether the guard drops r from a name before
// comparing it: a character that does not change what a reader (or a
// lenient server) takes the name to be.
func ignoredInName(r rune) bool {
	return r == utf8.RuneError ||
		unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) ||
		unicode.Is(unicode.Pd, r) || unicode.Is(unicode.Pc, r) ||
		unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Cc, r) ||
		unicode.IsSpace(r) || unicode.Is(unicode.Zs, r) ||
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r)
}

// asciiIgnored is ignoredInName for each ASCII byte: the controls, space,
// '-' and '_'.
var asciiIgnored = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = ignoredInName(rune(c))
	}
	return t
}()

func IsPlainASCII(s string) bool {
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

// LooksSecret is a heuristic for names like session_token, apiKey or
// X-Auth: a stem anywhere, or a short word as a whole word (so "key" in
// "api-key" but not in "monkey").
func LooksSecret(name string) bool {
	lower := strings.ToLower(NormaliseName(name))
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

// SortedUnique returns the names sorted, without repeats (nil for none).
func SortedUnique(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := slices.Clone(in)
	slices.Sort(out)
	return slices.Compact(out)
}
