// Package expand owns the ${VAR} syntax of configuration values:
// ${VAR}, ${VAR:-default} (nested at most MaxReferenceDepth deep) and $$
// for a literal $. Errors name variables, never the string or a value.
package expand

import (
	"errors"
	"fmt"
	"strings"
)

// UnsetVariableError reports a ${VAR} reference to an unset variable that
// has no default. It carries the variable's name only.
type UnsetVariableError struct {
	Name string
}

func (e *UnsetVariableError) Error() string {
	return "environment variable " + e.Name + " is not set"
}

// MaxReferenceDepth bounds how deeply ${VAR:-default} references nest
// (${A:-${B:-...}}). Each level rescans its own default once, so the
// bound also keeps expansion linear in the length of the string.
const MaxReferenceDepth = 32

// String replaces ${VAR} and ${VAR:-default} references and turns
// $$ into $. A substituted value is inserted as it is, never scanned again.
// Errors name variables but never the string or any value.
func String(s string, lookup func(string) (string, bool)) (string, error) {
	return expandAt(s, lookup, 0)
}

// expandAt expands s, found inside level enclosing references.
func expandAt(s string, lookup func(string) (string, bool), level int) (string, error) {
	if !strings.Contains(s, "$") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '{':
			end, err := closingBrace(s, i+2, MaxReferenceDepth-level-1)
			if err != nil {
				return "", err
			}
			value, err := resolveReference(s[i+2:end], lookup, level+1)
			if err != nil {
				return "", err
			}
			b.WriteString(value)
			i = end + 1
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String(), nil
}

// errTooDeep reports references nested beyond MaxReferenceDepth.
var errTooDeep = fmt.Errorf("${...} references nested more than %d deep", MaxReferenceDepth)

// closingBrace finds the } that ends a reference starting at from, allowing
// nested references (at most room more levels) and $$ in a default.
func closingBrace(s string, from, room int) (int, error) {
	depth := 0
	for j := from; j < len(s); j++ {
		switch {
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '$':
			j++
		case s[j] == '$' && j+1 < len(s) && s[j+1] == '{':
			depth++
			if depth > room {
				return 0, errTooDeep
			}
			j++
		case s[j] == '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		}
	}
	return 0, errors.New("unterminated ${ reference (missing })")
}

// resolveReference resolves the reference text ref (between ${ and }),
// which is the level-th nested reference.
func resolveReference(ref string, lookup func(string) (string, bool), level int) (string, error) {
	name, fallback, hasDefault := strings.Cut(ref, ":-")
	if !validVariableName(name) {
		// The text may be a mistyped secret, so it is not shown.
		return "", errors.New("invalid ${...} reference: expected ${NAME} or ${NAME:-default} with NAME made of letters, digits and _")
	}
	value, set := lookup(name)
	if set && (value != "" || !hasDefault) {
		return value, nil
	}
	if !hasDefault {
		return "", &UnsetVariableError{Name: name}
	}
	expanded, err := expandAt(fallback, lookup, level)
	if err != nil {
		return "", fmt.Errorf("in the default for %s: %w", name, err)
	}
	return expanded, nil
}

func validVariableName(name string) bool {
	if name == "" || (name[0] >= '0' && name[0] <= '9') {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
