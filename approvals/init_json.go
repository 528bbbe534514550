package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// initJSONValue is the approvals block of plan as plain JSON values, empty
// and zero fields left out (JSON has no comments: the entries' notes are
// not carried).
func initJSONValue(plan InitPlan, withRules bool) (map[string]any, error) {
	block := map[string]any{}
	var entries any = []any{}
	if len(plan.Entries) > 0 {
		v, err := prunedJSON(plan.Entries)
		if err != nil {
			return nil, err
		}
		entries = v
	}
	block["catalogue"] = entries
	if withRules && len(plan.Rules) > 0 {
		v, err := prunedJSON(plan.Rules)
		if err != nil {
			return nil, err
		}
		block["rules"] = v
	}
	return block, nil
}

// prunedJSON is v as decoded JSON with null, empty and zero members left
// out, so that what is printed is what a person would write.
func prunedJSON(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the approvals block: %w", err)
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return nil, fmt.Errorf("encode the approvals block: %w", err)
	}
	return prune(decoded), nil
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			e = prune(e)
			if empty(e) {
				delete(t, k)
				continue
			}
			t[k] = e
		}
		return t
	case []any:
		for i := range t {
			t[i] = prune(t[i])
		}
		return t
	}
	return v
}

func empty(v any) bool {
	switch t := v.(type) {
	case nil:
		return true
	case string:
		return t == ""
	case float64:
		return t == 0
	case []any:
		return len(t) == 0
	case map[string]any:
		return len(t) == 0
	}
	return false
}

// WriteInitJSON writes plan as one JSON configuration fragment,
// {"approvals": {...}}, for JSON configuration files (a copied Claude
// Desktop config is one).
func WriteInitJSON(w io.Writer, plan InitPlan) error {
	block, err := initJSONValue(plan, true)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(map[string]any{"approvals": block}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the approvals block: %w", err)
	}
	if _, err := w.Write(append(out, '\n')); err != nil {
		return fmt.Errorf("write the approvals block: %w", err)
	}
	return nil
}

// MergeInitJSON adds plan to a JSON configuration, keeping the file's own
// text: without an approvals section the block becomes the top-level
// object's last member; with one, the entries are appended to its
// catalogue (created when missing) and the default rules, which a plan
// holds only when the configuration has none, fill in an absent, null or
// empty rules member. Every byte outside the inserted text is kept.
// changed is false when the plan adds nothing, so a second run adds
// nothing. A document whose top level, approvals or catalogue is not the
// kind of JSON value expected is refused (ErrInitEdit).
func MergeInitJSON(data []byte, plan InitPlan) (out []byte, added int, rulesAdded, changed bool, err error) {
	top, err := jsonMembers(data)
	if err != nil {
		return nil, 0, false, false, fmt.Errorf("%w: the top level is not a JSON object", ErrInitEdit)
	}
	if len(plan.Entries) == 0 && len(plan.Rules) == 0 {
		return data, 0, false, false, nil
	}
	block, err := initJSONValue(plan, true)
	if err != nil {
		return nil, 0, false, false, err
	}
	var e jsonEdit
	span, ok := top.members["approvals"]
	switch {
	case !ok:
		e.addMembers(data, top, "  ", member{"approvals", block})
	case string(data[span[0]:span[1]]) == "null":
		e.replace(span, block, "  ")
	default:
		sec, err := jsonMembers(data[span[0]:span[1]])
		if err != nil {
			return nil, 0, false, false, fmt.Errorf("%w: approvals is not a JSON object", ErrInitEdit)
		}
		sec = sec.shift(span[0])
		var missing []member
		if len(plan.Entries) > 0 {
			add, err := e.appendEntries(data, sec, block["catalogue"])
			if err != nil {
				return nil, 0, false, false, err
			}
			missing = append(missing, add...)
		}
		if rules, ok := block["rules"]; ok {
			if rs, ok := sec.members["rules"]; ok {
				if v := string(bytes.TrimSpace(data[rs[0]:rs[1]])); v != "null" && v != "[]" && strings.TrimSpace(strings.Trim(v, "[]")) != "" {
					return nil, 0, false, false, fmt.Errorf("%w: the plan has rules but the configuration's approvals.rules is not empty", ErrInitEdit)
				}
				e.replace(rs, rules, "    ")
			} else {
				missing = append(missing, member{"rules", rules})
			}
		}
		e.addMembers(data, sec, "    ", missing...)
	}
	out, err = e.apply(data)
	if err != nil {
		return nil, 0, false, false, err
	}
	return out, len(plan.Entries), len(plan.Rules) > 0, true, nil
}

// jsonObject is where an object's members' values are in a document:
// byte spans [start, end) by name, and the offset of its closing brace.
type jsonObject struct {
	members map[string][2]int
	close   int
	empty   bool
}

func (o jsonObject) shift(by int) jsonObject {
	m := make(map[string][2]int, len(o.members))
	for k, v := range o.members {
		m[k] = [2]int{v[0] + by, v[1] + by}
	}
	return jsonObject{members: m, close: o.close + by, empty: o.empty}
}

// jsonMembers reads the JSON object that is the whole of data.
func jsonMembers(data []byte) (jsonObject, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return jsonObject{}, errors.New("not an object")
	}
	o := jsonObject{members: map[string][2]int{}, empty: true}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonObject{}, err
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return jsonObject{}, err
		}
		end := int(dec.InputOffset())
		o.members[key] = [2]int{end - len(raw), end}
		o.empty = false
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return jsonObject{}, errors.New("not an object")
	}
	o.close = int(dec.InputOffset()) - 1
	if _, err := dec.Token(); err != io.EOF {
		return jsonObject{}, errors.New("text after the object")
	}
	return o, nil
}

// jsonEdit collects insertions and replacements in a document, applied
// from the end so that earlier offsets stay valid.
type jsonEdit struct {
	edits []struct {
		span [2]int
		text []byte
	}
	err error
}

func (e *jsonEdit) add(span [2]int, text []byte) {
	e.edits = append(e.edits, struct {
		span [2]int
		text []byte
	}{span, text})
}

func (e *jsonEdit) encode(v any, indent string) []byte {
	b, err := json.MarshalIndent(v, indent, "  ")
	if err != nil && e.err == nil {
		e.err = fmt.Errorf("encode the approvals block: %w", err)
	}
	return b
}

func (e *jsonEdit) replace(span [2]int, v any, indent string) {
	e.add(span, e.encode(v, indent))
}

// member is one "name": value to add to an object.
type member struct {
	name  string
	value any
}

// addMembers inserts members as o's last members.
func (e *jsonEdit) addMembers(data []byte, o jsonObject, indent string, members ...member) {
	if len(members) == 0 {
		return
	}
	// Insert after the last value (before any white space leading to the
	// closing brace), so the file's own layout of what follows is kept.
	at := len(bytes.TrimRight(data[:o.close], " \t\r\n"))
	var b bytes.Buffer
	for i, m := range members {
		if i > 0 || !o.empty {
			b.WriteByte(',')
		}
		b.WriteString("\n" + indent)
		key, _ := json.Marshal(m.name)
		b.Write(key)
		b.WriteString(": ")
		b.Write(e.encode(m.value, indent))
	}
	if o.empty {
		b.WriteString("\n" + indent[:len(indent)-2])
	}
	e.add([2]int{at, at}, b.Bytes())
}

// appendEntries adds entries (a JSON array value) to sec's catalogue, or
// returns the catalogue member to add when sec has none.
func (e *jsonEdit) appendEntries(data []byte, sec jsonObject, entries any) ([]member, error) {
	span, ok := sec.members["catalogue"]
	if !ok {
		return []member{{"catalogue", entries}}, nil
	}
	if string(data[span[0]:span[1]]) == "null" {
		e.replace(span, entries, "    ")
		return nil, nil
	}
	list := data[span[0]:span[1]]
	if len(list) < 2 || list[0] != '[' {
		return nil, fmt.Errorf("%w: approvals.catalogue is not a JSON array", ErrInitEdit)
	}
	items, _ := entries.([]any)
	at := span[0] + len(bytes.TrimRight(list[:len(list)-1], " \t\r\n"))
	var b bytes.Buffer
	nonEmpty := len(bytes.TrimSpace(list[1:len(list)-1])) > 0
	for i, item := range items {
		if i > 0 || nonEmpty {
			b.WriteByte(',')
		}
		b.WriteString("\n      ")
		b.Write(e.encode(item, "      "))
	}
	b.WriteString("\n    ")
	if nonEmpty {
		// Keep the file's own text between the last entry and ']'.
		b.Truncate(b.Len() - len("\n    "))
	}
	e.add([2]int{at, at}, b.Bytes())
	return nil, nil
}

func (e *jsonEdit) apply(data []byte) ([]byte, error) {
	if e.err != nil {
		return nil, e.err
	}
	// Edits never overlap: apply them from the end so that the offsets of
	// the earlier ones stay valid.
	sort.SliceStable(e.edits, func(i, j int) bool { return e.edits[i].span[0] < e.edits[j].span[0] })
	out := append([]byte(nil), data...)
	for i := len(e.edits) - 1; i >= 0; i-- {
		ed := e.edits[i]
		out = append(out[:ed.span[0]:ed.span[0]], append(ed.text, out[ed.span[1]:]...)...)
	}
	return out, nil
}
