package jsonlex

import (
	"bytes"
	"encoding/json"
)

// Member is one member of a JSON object: its name, decoded, and its value,
// raw.
type Member struct {
	Key   string
	Value json.RawMessage
}

// ObjectMembers splits a JSON object already known to be valid into its
// members, in order (a repeated key appears again, later), without reading
// inside the values. Each Value shares obj's bytes (with its capacity
// capped, so appending to it cannot overwrite obj).
func ObjectMembers(obj []byte) []Member {
	obj = bytes.TrimSpace(obj)
	lx := New(obj)
	lx.Next() // '{'
	var members []Member
	for {
		kind, raw := lx.Next()
		if kind != Key {
			return members
		}
		key := Unquote(raw)
		start := lx.ValueStart()
		lx.SkipValue()
		members = append(members, Member{Key: key, Value: obj[start:lx.pos:lx.pos]})
	}
}
