package approvals

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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

// MergeInitJSON adds plan to a JSON configuration that has no approvals
// section: the block becomes the top-level object's last member, and every
// byte before it is kept as it was. A configuration that already has an
// approvals section is refused (ErrInitEdit): merge the printed block by
// hand. changed is false when the plan adds nothing.
func MergeInitJSON(data []byte, plan InitPlan) (out []byte, added int, rulesAdded, changed bool, err error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil, 0, false, false, fmt.Errorf("%w: the top level is not a JSON object", ErrInitEdit)
	}
	if _, ok := top["approvals"]; ok {
		return nil, 0, false, false, fmt.Errorf("%w: the JSON configuration already has an approvals section; run without --write and merge the printed block by hand", ErrInitEdit)
	}
	if len(plan.Entries) == 0 && len(plan.Rules) == 0 {
		return data, 0, false, false, nil
	}
	block, err := initJSONValue(plan, true)
	if err != nil {
		return nil, 0, false, false, err
	}
	member, err := json.MarshalIndent(block, "  ", "  ")
	if err != nil {
		return nil, 0, false, false, fmt.Errorf("encode the approvals block: %w", err)
	}
	end := bytes.LastIndexByte(data, '}')
	body := bytes.TrimRight(data[:end], " \t\r\n")
	var b bytes.Buffer
	b.Write(body)
	if len(top) > 0 {
		b.WriteByte(',')
	}
	b.WriteString("\n  \"approvals\": ")
	b.Write(member)
	b.WriteString("\n}")
	b.Write(data[end+1:])
	return b.Bytes(), len(plan.Entries), len(plan.Rules) > 0, true, nil
}
