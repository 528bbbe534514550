package approvals

import (
	"errors"
	"regexp"
	"strings"
)

// glob is a compiled name pattern: * matches any run of characters
// (including / and .), ? one character, [abc], [a-z] and [!a-z] a class, and
// a backslash escapes the next character.
type glob struct {
	pattern string
	any     bool
	literal bool
	re      *regexp.Regexp
}

func compileGlob(p string) (glob, error) {
	if p == "" {
		return glob{}, errors.New("empty pattern")
	}
	if p == "*" {
		return glob{pattern: p, any: true}, nil
	}
	if !strings.ContainsAny(p, `*?[\`) {
		return glob{pattern: p, literal: true}, nil
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	rs := []rune(p)
	for i := 0; i < len(rs); i++ {
		switch r := rs[i]; r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 >= len(rs) {
				return glob{}, errors.New("pattern ends with a backslash")
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case '[':
			end, class, err := globClass(rs, i)
			if err != nil {
				return glob{}, err
			}
			b.WriteString(class)
			i = end
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return glob{}, err
	}
	return glob{pattern: p, re: re}, nil
}

// globClass translates the class starting at rs[start] == '[' and returns
// the index of its closing ']'.
func globClass(rs []rune, start int) (int, string, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := start + 1
	if i < len(rs) && (rs[i] == '!' || rs[i] == '^') {
		b.WriteByte('^')
		i++
	}
	first := i
	for ; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ']' && i > first:
			b.WriteByte(']')
			return i, b.String(), nil
		case r == '\\':
			if i+1 >= len(rs) {
				return 0, "", errors.New("pattern ends with a backslash")
			}
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case r == '-' && i > first && i+1 < len(rs) && rs[i+1] != ']':
			if rs[i+1] < rs[i-1] {
				return 0, "", errors.New("character class range is out of order")
			}
			b.WriteByte('-')
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return 0, "", errors.New("unterminated character class")
}

func (g glob) match(s string) bool {
	switch {
	case g.any:
		return true
	case g.literal:
		return g.pattern == s
	case g.re == nil:
		return false
	}
	return g.re.MatchString(s)
}

func matchAny(globs []glob, s string) bool {
	for _, g := range globs {
		if g.match(s) {
			return true
		}
	}
	return false
}

// EscapeGlob quotes the pattern characters of a literal tool or server name,
// so that it can be used as a catalogue glob that matches only itself.
func EscapeGlob(name string) string {
	if !strings.ContainsAny(name, `*?[\`) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
