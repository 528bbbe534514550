// Package glob is the one name-pattern dialect of the agenthost
// configuration: tool filters (mcpServers.*.tools.allow and deny), the
// server and tool patterns of bindings, and the server and tool patterns of
// the approvals catalogue and rules.
//
// Syntax, matched against the whole name, case-sensitively (tool and
// server names are case-sensitive):
//
//   - "*" matches any run of characters, including none, "/" and ".";
//   - "?" matches exactly one character (a Unicode code point);
//   - "[abc]" matches one character of the class, "[a-z]" a range, and
//     "[!a-z]" or "[^a-z]" any character outside the class; a "]" first
//     in the class is literal;
//   - a backslash escapes the next character: "\*", "\?", "\[", "\\".
//
// Unlike path.Match, "*" does not stop at "/": deny: ["drop_*"] hides
// drop_db/all too, and allow: ["*"] offers every name. MatchPath is the
// one exception, for file paths (the managed policy's command patterns):
// there "*", "?" and classes never match a "/". A malformed pattern
// (an unterminated class, a range out of order, a trailing backslash) or an
// empty one is an error for Compile and Validate and matches nothing in
// Match. Matching does not allocate.
package glob

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// Errors returned by Validate and Compile.
var (
	ErrEmpty        = errors.New("empty pattern")
	ErrTrailingEsc  = errors.New("pattern ends with a backslash")
	ErrUnterminated = errors.New("unterminated character class")
	ErrRangeOrder   = errors.New("character class range is out of order")
)

// Syntax is a short summary of the dialect, for error messages.
const Syntax = `*, ?, [a-z], [!a-z], \ to escape`

// Pattern is a validated pattern.
type Pattern struct {
	p    string
	kind uint8
}

const (
	kindWild    uint8 = iota // has pattern characters
	kindAny                  // "*"
	kindLiteral              // no pattern characters
)

const special = `*?[\`

// Compile validates p.
func Compile(p string) (Pattern, error) {
	if err := Validate(p); err != nil {
		return Pattern{}, err
	}
	switch {
	case p == "*":
		return Pattern{p: p, kind: kindAny}, nil
	case !strings.ContainsAny(p, special):
		return Pattern{p: p, kind: kindLiteral}, nil
	}
	return Pattern{p: p, kind: kindWild}, nil
}

// String returns the pattern as written.
func (g Pattern) String() string { return g.p }

// Match reports whether name matches the whole pattern. The zero Pattern
// matches nothing.
func (g Pattern) Match(name string) bool {
	switch g.kind {
	case kindAny:
		return true
	case kindLiteral:
		return g.p == name && g.p != ""
	}
	return g.p != "" && match(g.p, name, false)
}

// MatchAny reports whether any of the patterns matches name.
func MatchAny(patterns []Pattern, name string) bool {
	for _, g := range patterns {
		if g.Match(name) {
			return true
		}
	}
	return false
}

// Match reports whether name matches pattern; a malformed or empty pattern
// matches nothing.
func Match(pattern, name string) bool {
	if pattern == "*" {
		return true
	}
	if !strings.ContainsAny(pattern, special) {
		return pattern == name && pattern != ""
	}
	return Validate(pattern) == nil && match(pattern, name, false)
}

// MatchPath is Match for a file path: "*", "?" and character classes
// never match "/", so "/opt/mcp/bin/*" matches the files in that folder
// and nothing below or beside it. The caller cleans the path: a ".." in
// it is matched as written.
func MatchPath(pattern, name string) bool {
	if !strings.ContainsAny(pattern, special) {
		return pattern == name && pattern != ""
	}
	return Validate(pattern) == nil && match(pattern, name, true)
}

// Validate reports whether p is a well-formed, non-empty pattern.
func Validate(p string) error {
	if p == "" {
		return ErrEmpty
	}
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			if i+1 >= len(p) {
				return ErrTrailingEsc
			}
			i++
		case '[':
			_, end, err := matchClass(p, i, 0)
			if err != nil {
				return err
			}
			i = end - 1
		}
	}
	return nil
}

// Escape quotes the pattern characters of a literal name, so that the
// result is a pattern that matches only that name.
func Escape(name string) string {
	if !strings.ContainsAny(name, special) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(special, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// match matches a valid pattern against name. A star remembers where it
// was; on a mismatch the star takes one more character and matching
// resumes after it (linear in practice, at worst len(p)*len(name)). With
// path, no wildcard takes a '/'.
func match(p, name string, path bool) bool {
	px, nx := 0, 0
	starPx, starNx := -1, 0
	for px < len(p) || nx < len(name) {
		if px < len(p) {
			switch c := p[px]; c {
			case '*':
				starPx, starNx = px, nx
				px++
				continue
			case '?':
				if nx < len(name) && !(path && name[nx] == '/') {
					_, w := utf8.DecodeRuneInString(name[nx:])
					px++
					nx += w
					continue
				}
			case '[':
				if nx < len(name) && !(path && name[nx] == '/') {
					r, w := utf8.DecodeRuneInString(name[nx:])
					if ok, end, _ := matchClass(p, px, r); ok {
						px = end
						nx += w
						continue
					}
				}
			case '\\':
				if nx < len(name) && p[px+1] == name[nx] {
					// Escaped: compare the escaped character's bytes.
					_, w := utf8.DecodeRuneInString(p[px+1:])
					if strings.HasPrefix(name[nx:], p[px+1:px+1+w]) {
						px += 1 + w
						nx += w
						continue
					}
				}
			default:
				if nx < len(name) && c == name[nx] {
					px++
					nx++
					continue
				}
			}
		}
		if starPx >= 0 && starNx < len(name) && !(path && name[starNx] == '/') {
			_, w := utf8.DecodeRuneInString(name[starNx:])
			starNx += w
			px, nx = starPx+1, starNx
			continue
		}
		return false
	}
	return true
}

// matchClass reads the class starting at p[start] == '[' and reports
// whether r is in it, and the index just past its closing ']'.
func matchClass(p string, start int, r rune) (matched bool, end int, err error) {
	i := start + 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	first := i
	in := false
	for i < len(p) {
		if p[i] == ']' && i > first {
			return in != negate, i + 1, nil
		}
		lo, w, err := classChar(p, i)
		if err != nil {
			return false, 0, err
		}
		i += w
		hi := lo
		if i+1 < len(p) && p[i] == '-' && p[i+1] != ']' {
			hi, w, err = classChar(p, i+1)
			if err != nil {
				return false, 0, err
			}
			if hi < lo {
				return false, 0, ErrRangeOrder
			}
			i += 1 + w
		}
		if lo <= r && r <= hi {
			in = true
		}
	}
	return false, 0, ErrUnterminated
}

// classChar reads one (possibly escaped) character of a class.
func classChar(p string, i int) (rune, int, error) {
	if p[i] == '\\' {
		if i+1 >= len(p) {
			return 0, 0, ErrTrailingEsc
		}
		r, w := utf8.DecodeRuneInString(p[i+1:])
		return r, 1 + w, nil
	}
	r, w := utf8.DecodeRuneInString(p[i:])
	return r, w, nil
}
