// Package jsonedit owns editing a JSON document in place: finding an
// object's members by name and inserting, replacing or removing text so that
// every byte outside the edit is kept (the layout of a configuration file a
// person wrote). `policy init --write` and `mcp add`/`mcp remove` edit JSON
// configurations with it.
package jsonedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
)

// Object is where an object's members are in a document: each value's byte
// span [start, end) by name, where each member's text starts (the end of
// the value or brace before it), their order, and the offset of the
// closing brace.
type Object struct {
	Members map[string][2]int
	Starts  map[string]int
	Order   []string
	Close   int
	Empty   bool
}

// Shift moves every offset of o by by (an object read from a part of a
// document).
func (o Object) Shift(by int) Object {
	m := make(map[string][2]int, len(o.Members))
	for k, v := range o.Members {
		m[k] = [2]int{v[0] + by, v[1] + by}
	}
	s := make(map[string]int, len(o.Starts))
	for k, v := range o.Starts {
		s[k] = v + by
	}
	return Object{Members: m, Starts: s, Order: o.Order, Close: o.Close + by, Empty: o.Empty}
}

// Members reads the JSON object that is the whole of data.
func Members(data []byte) (Object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return Object{}, errors.New("not an object")
	}
	o := Object{Members: map[string][2]int{}, Starts: map[string]int{}, Empty: true}
	for dec.More() {
		start := int(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return Object{}, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Object{}, err
		}
		end := int(dec.InputOffset())
		if _, dup := o.Members[key]; !dup {
			o.Order = append(o.Order, key)
		}
		o.Members[key] = [2]int{end - len(raw), end}
		o.Starts[key] = start
		o.Empty = false
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return Object{}, errors.New("not an object")
	}
	o.Close = int(dec.InputOffset()) - 1
	if _, err := dec.Token(); err != io.EOF {
		return Object{}, errors.New("text after the object")
	}
	return o, nil
}

// Edit collects insertions and replacements in a document, applied from
// the end so that earlier offsets stay valid. Edits must not overlap.
type Edit struct {
	edits []struct {
		span [2]int
		text []byte
	}
	err error
}

// Add replaces span with text (an empty span inserts).
func (e *Edit) Add(span [2]int, text []byte) {
	e.edits = append(e.edits, struct {
		span [2]int
		text []byte
	}{span, text})
}

// Encode is v as indented JSON whose lines after the first start with
// indent, without encoding/json's escaping of <, > and & (a URL's query
// reads as a person wrote it); an error is kept for Apply.
func (e *Edit) Encode(v any, indent string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(indent, "  ")
	if err := enc.Encode(v); err != nil && e.err == nil {
		e.err = fmt.Errorf("encode JSON: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// Replace replaces the value at span with v.
func (e *Edit) Replace(span [2]int, v any, indent string) {
	e.Add(span, e.Encode(v, indent))
}

// Member is one "name": value to add to an object.
type Member struct {
	Name  string
	Value any
}

// AddMembers inserts members as o's last members, each on a line of its
// own at indent (at least two spaces).
func (e *Edit) AddMembers(data []byte, o Object, indent string, members ...Member) {
	if len(members) == 0 {
		return
	}
	// Insert after the last value (before any white space leading to the
	// closing brace), so the file's own layout of what follows is kept.
	at := len(bytes.TrimRight(data[:o.Close], " \t\r\n"))
	var b bytes.Buffer
	for i, m := range members {
		if i > 0 || !o.Empty {
			b.WriteByte(',')
		}
		b.WriteString("\n" + indent)
		key, _ := json.Marshal(m.Name)
		b.Write(key)
		b.WriteString(": ")
		b.Write(e.Encode(m.Value, indent))
	}
	if o.Empty {
		b.WriteString("\n" + indent[:len(indent)-2])
	}
	e.Add([2]int{at, at}, b.Bytes())
}

// RemoveMember removes the member name of o with its comma; false when o
// has no such member.
func (e *Edit) RemoveMember(data []byte, o Object, name string) bool {
	span, ok := o.Members[name]
	if !ok {
		return false
	}
	start := o.Starts[name]
	if o.Order[0] != name || len(o.Order) == 1 {
		// From the end of the value before (its comma included) to the
		// end of this one.
		e.Add([2]int{start, span[1]}, nil)
		return true
	}
	// The first of several: up to and with the comma after it.
	end := span[1]
	for end < len(data) && data[end] != ',' {
		end++
	}
	e.Add([2]int{start, end + 1}, nil)
	return true
}

// Apply returns data with the edits made.
func (e *Edit) Apply(data []byte) ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	sort.SliceStable(e.edits, func(i, j int) bool { return e.edits[i].span[0] < e.edits[j].span[0] })
	out := append([]byte(nil), data...)
	for i := len(e.edits) - 1; i >= 0; i-- {
		ed := e.edits[i]
		out = append(out[:ed.span[0]:ed.span[0]], append(ed.text, out[ed.span[1]:]...)...)
	}
	return out, nil
}
