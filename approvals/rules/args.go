package rules

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/internal/jsonlex"
)

// ArgsCheck is what one check of a call's arguments found (CheckArgs):
// that they, bytes.TrimSpace of them, are one valid JSON value. A call's
// path checks its arguments once and hands the check on with them, in
// Call.ArgsCheck, to the call-time escalators, the argument-schema check
// and the audit records, instead of each running json.Valid again.
//
// A check vouches for the very bytes it checked, not for their text: Valid
// compares the slice (where it starts, how long it is), so a check handed
// on with other bytes, or with arguments a redactor rewrote, vouches for
// nothing and those are checked as before. The zero ArgsCheck has checked
// nothing. Arguments are read-only once checked (as Call.Args always is).
type ArgsCheck struct {
	valid []byte // the trimmed arguments found valid; nil: none
}

// CheckArgs checks args once: valid JSON after bytes.TrimSpace, as
// json.Valid decides it. Empty (or all-space) arguments check as not
// valid; every reader of a check handles those itself.
func CheckArgs(args json.RawMessage) ArgsCheck {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || !jsonlex.Valid(t) {
		return ArgsCheck{}
	}
	return ArgsCheck{valid: t}
}

// Trimmed returns bytes.TrimSpace(args) and true when c checked those very
// bytes and found them valid JSON; nil and false otherwise (args were not
// checked, were not valid, or are other bytes).
func (c ArgsCheck) Trimmed(args json.RawMessage) ([]byte, bool) {
	if len(c.valid) == 0 {
		return nil, false
	}
	t := bytes.TrimSpace(args)
	if len(t) != len(c.valid) || &t[0] != &c.valid[0] {
		return nil, false
	}
	return t, true
}

// Valid reports whether c checked args and found them valid JSON.
func (c ArgsCheck) Valid(args json.RawMessage) bool {
	_, ok := c.Trimmed(args)
	return ok
}

// ValidAsGiven reports whether c checked args and json.Valid(args) holds
// for them as given, untrimmed: the check found bytes.TrimSpace(args)
// valid, and what TrimSpace dropped around them is JSON's own whitespace
// (space, tab, newline, carriage return). Arguments that end (or begin)
// in another space TrimSpace drops, a form feed or U+00A0, are valid
// trimmed but not as given: ValidAsGiven is false for them, as json.Valid
// is, and a reader that validates the bytes as given does so itself.
func (c ArgsCheck) ValidAsGiven(args json.RawMessage) bool {
	t, ok := c.Trimmed(args)
	if !ok {
		return false
	}
	lead := len(args) - len(bytes.TrimLeftFunc(args, unicode.IsSpace))
	return jsonSpace(args[:lead]) && jsonSpace(args[lead+len(t):])
}

// jsonSpace reports whether b is only JSON's whitespace.
func jsonSpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
		default:
			return false
		}
	}
	return true
}

// JSONOrString is the arguments as an audit record or an explanation
// writes them: valid JSON as-is (trimmed), anything else as a JSON string
// (norm.JSONOrString), without checking again arguments c vouches for.
func (c ArgsCheck) JSONOrString(args json.RawMessage) json.RawMessage {
	if t, ok := c.Trimmed(args); ok {
		return t
	}
	return norm.JSONOrString(args)
}

// Clone returns a copy of args and the check of the copy: what c found of
// args holds for the copy (the same bytes), so a record that owns a copy
// of the arguments keeps the check without running it again.
func (c ArgsCheck) Clone(args json.RawMessage) (json.RawMessage, ArgsCheck) {
	return c.CloneInto(nil, args)
}

// CloneInto is Clone with the copy in room's storage when the arguments
// fit in it (the copy's capacity is its length, so an append to it never
// writes over the rest of room), else in a new slice as Clone makes it.
// An audit record's one allocation holds its arguments this way.
func (c ArgsCheck) CloneInto(room []byte, args json.RawMessage) (json.RawMessage, ArgsCheck) {
	var out json.RawMessage
	if n := len(args); n > 0 && n <= cap(room) {
		out = append(room[:0], args...)[:n:n]
	} else {
		out = slices.Clone(args)
	}
	if !c.Valid(args) {
		return out, ArgsCheck{}
	}
	return out, ArgsCheck{valid: bytes.TrimSpace(out)}
}
