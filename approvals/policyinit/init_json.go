package policyinit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/agenthost/agenthost/internal/jsonedit"
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
	top, err := jsonedit.Members(data)
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
	var e jsonedit.Edit
	span, ok := top.Members["approvals"]
	switch {
	case !ok:
		e.AddMembers(data, top, "  ", jsonedit.Member{Name: "approvals", Value: block})
	case string(data[span[0]:span[1]]) == "null":
		e.Replace(span, block, "  ")
	default:
		sec, err := jsonedit.Members(data[span[0]:span[1]])
		if err != nil {
			return nil, 0, false, false, fmt.Errorf("%w: approvals is not a JSON object", ErrInitEdit)
		}
		sec = sec.Shift(span[0])
		var missing []jsonedit.Member
		if len(plan.Entries) > 0 {
			add, err := appendEntries(&e, data, sec, block["catalogue"])
			if err != nil {
				return nil, 0, false, false, err
			}
			missing = append(missing, add...)
		}
		if rules, ok := block["rules"]; ok {
			if rs, ok := sec.Members["rules"]; ok {
				if v := string(bytes.TrimSpace(data[rs[0]:rs[1]])); v != "null" && v != "[]" && strings.TrimSpace(strings.Trim(v, "[]")) != "" {
					return nil, 0, false, false, fmt.Errorf("%w: the plan has rules but the configuration's approvals.rules is not empty", ErrInitEdit)
				}
				e.Replace(rs, rules, "    ")
			} else {
				missing = append(missing, jsonedit.Member{Name: "rules", Value: rules})
			}
		}
		e.AddMembers(data, sec, "    ", missing...)
	}
	out, err = e.Apply(data)
	if err != nil {
		return nil, 0, false, false, err
	}
	return out, len(plan.Entries), len(plan.Rules) > 0, true, nil
}

// appendEntries adds entries (a JSON array value) to sec's catalogue, or
// returns the catalogue member to add when sec has none.
func appendEntries(e *jsonedit.Edit, data []byte, sec jsonedit.Object, entries any) ([]jsonedit.Member, error) {
	span, ok := sec.Members["catalogue"]
	if !ok {
		return []jsonedit.Member{{Name: "catalogue", Value: entries}}, nil
	}
	if string(data[span[0]:span[1]]) == "null" {
		e.Replace(span, entries, "    ")
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
		b.Write(e.Encode(item, "      "))
	}
	b.WriteString("\n    ")
	if nonEmpty {
		// Keep the file's own text between the last entry and ']'.
		b.Truncate(b.Len() - len("\n    "))
	}
	e.Add([2]int{at, at}, b.Bytes())
	return nil, nil
}
