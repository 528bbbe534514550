package config

import (
	"errors"
	"fmt"
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

// problems collects configuration errors so a user sees all of them at once.
type problems struct {
	file string
	list []error
}

func (p *problems) add(key, msg string) {
	p.list = append(p.list, &Error{File: p.file, Key: key, Msg: msg})
}

func (p *problems) addf(key, format string, args ...any) {
	p.add(key, fmt.Sprintf(format, args...))
}

// err returns nil, the single *Error, or all problems joined.
func (p *problems) err() error {
	switch len(p.list) {
	case 0:
		return nil
	case 1:
		return p.list[0]
	default:
		return errors.Join(p.list...)
	}
}

// childKey appends a map key or field name to a key path. Keys that would
// be ambiguous in a dotted path are quoted: mcpServers["my.server"].
func childKey(parent, key string) string {
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

// indexKey appends a list index to a key path.
func indexKey(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}
