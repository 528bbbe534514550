// Package problem owns how a configuration problem is reported: the error
// type (re-exported as config.Error) and its sentinel, the list that
// collects every problem of a file so a user sees all of them at once,
// and the key paths that name a setting ("mcpServers.orders.args[2]").
package problem

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrConfig matches every error this package returns for a bad or
// unreadable configuration: errors.Is(err, ErrConfig).
var ErrConfig = errors.New("configuration error")

// Error is one configuration problem. Its message never contains a
// configured value, only file, key and variable names.
type Error struct {
	// File is the configuration file ("" when there is none, e.g. for an
	// environment override applied without a file).
	File string
	// Key is the setting's path, e.g. "mcpServers.orders.args[2]"; "" for
	// problems with the file as a whole.
	Key string
	// Msg says what is wrong.
	Msg string
	// Err is the underlying cause when there is one (e.g. fs.ErrNotExist).
	Err error
}

// Error renders "file: key: msg", leaving out empty parts.
func (e *Error) Error() string {
	parts := make([]string, 0, 3)
	if e.File != "" {
		parts = append(parts, e.File)
	}
	if e.Key != "" {
		parts = append(parts, e.Key)
	}
	parts = append(parts, e.Msg)
	return strings.Join(parts, ": ")
}

// Unwrap returns the underlying cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is makes every *Error match ErrConfig.
func (e *Error) Is(target error) bool { return target == ErrConfig }

// List collects the problems of one file.
type List struct {
	File string
	list []error
}

// Add files a problem at key.
func (l *List) Add(key, msg string) {
	l.list = append(l.list, &Error{File: l.File, Key: key, Msg: msg})
}

// Addf files a problem at key, its message formatted.
func (l *List) Addf(key, format string, args ...any) {
	l.Add(key, fmt.Sprintf(format, args...))
}

// AddCause files a problem at key with its underlying cause.
func (l *List) AddCause(key, msg string, cause error) {
	l.list = append(l.list, &Error{File: l.File, Key: key, Msg: msg, Err: cause})
}

// Err returns nil, the single *Error, or all problems joined.
func (l *List) Err() error {
	switch len(l.list) {
	case 0:
		return nil
	case 1:
		return l.list[0]
	default:
		return errors.Join(l.list...)
	}
}

// Key appends a map key or field name to a key path. Keys that would be
// ambiguous in a dotted path are quoted: mcpServers["my.server"].
func Key(parent, key string) string {
	if key == "" || strings.IndexFunc(key, needsQuoting) >= 0 {
		return parent + "[" + strconv.Quote(key) + "]"
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func needsQuoting(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
		return false
	}
	return true
}

// Index appends a list index to a key path.
func Index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// Join appends an already formatted relative key path.
func Join(parent, rel string) string {
	if strings.HasPrefix(rel, "[") {
		return parent + rel
	}
	return parent + "." + rel
}

// Leaves flattens errors.Join trees.
func Leaves(err error) []error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		var leaves []error
		for _, e := range joined.Unwrap() {
			leaves = append(leaves, Leaves(e)...)
		}
		return leaves
	}
	return []error{err}
}

// SortedKeys are m's keys in order, so that problems are reported in the
// same order every time.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
