package argschema

import (
	"bytes"
	"encoding/json"

	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/jsonlex"
	"github.com/agenthost/agenthost/internal/safeschema"
)

// The fast path. Most tools' inputSchemas use a handful of keywords: an
// object's properties, required and additionalProperties, an array's
// items, a type (or a list of types), a list of allowed strings, and
// annotations. For such a schema the arguments are checked token by token
// over their bytes, without decoding them into maps and without the
// library's validator (which allocates per value and keyword). The fast
// path only ever accepts: whatever it cannot decide, and every mismatch,
// goes to the full validation, which gives the refusal its text. So it can
// refuse nothing the full path accepts, and FuzzFastPathAgrees checks that
// it accepts nothing the full path refuses.

// typeSet is a set of JSON Schema types.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tObject
	tArray
	tNumber
	tInteger // an integer literal (no fraction, no exponent): other integral numbers go the full path
	tString
	tAny typeSet = 1<<iota - 1
)

var typeNames = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "object": tObject, "array": tArray,
	"number": tNumber | tInteger, "integer": tInteger, "string": tString,
}

// fastNode is one subschema the fast path understands.
type fastNode struct {
	types typeSet
	enum  []string // non-nil: the value is one of these strings

	// objects
	props      map[string]*fastNode
	required   []string // at most 64 (a mask of them is kept per object)
	additional bool     // members not in props are allowed (absent or true)

	// arrays
	items *fastNode // nil: any item
}

// anyValue is the schema true.
var anyValue = fastNode{types: tAny, additional: true}

// annotations are keywords that do not constrain a value (format is left
// out: whether it asserts depends on the vocabulary).
var annotations = map[string]bool{
	"title": true, "description": true, "examples": true, "default": true,
	"$comment": true, "deprecated": true, "readOnly": true, "writeOnly": true,
}

// compileFast is the fast path's form of a decoded schema, nil when the
// schema uses anything it does not understand ($schema, $ref, numbers'
// bounds, patterns, combinators, ...).
func compileFast(schema any) *fastNode {
	if b, ok := schema.(bool); ok {
		if b {
			return &anyValue
		}
		return nil
	}
	obj, ok := schema.(map[string]any)
	if !ok {
		return nil
	}
	n := &fastNode{types: tAny, additional: true}
	for key, v := range obj {
		switch key {
		case "type":
			if n.types = fastTypes(v); n.types == 0 {
				return nil
			}
		case "enum":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			n.enum = make([]string, 0, len(list))
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				n.enum = append(n.enum, s)
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			n.props = make(map[string]*fastNode, len(props))
			for name, p := range props {
				if n.props[name] = compileFast(p); n.props[name] == nil {
					return nil
				}
			}
		case "required":
			list, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, e := range list {
				s, ok := e.(string)
				if !ok {
					return nil
				}
				n.required = append(n.required, s)
			}
			if len(n.required) > 64 {
				return nil
			}
		case "additionalProperties":
			b, ok := v.(bool)
			if !ok {
				return nil
			}
			n.additional = b
		case "items":
			if n.items = compileFast(v); n.items == nil {
				return nil
			}
		default:
			if !annotations[key] && !(len(key) > 2 && key[:2] == "x-") {
				return nil
			}
		}
	}
	return n
}

func fastTypes(v any) typeSet {
	switch v := v.(type) {
	case string:
		return typeNames[v]
	case []any:
		var set typeSet
		for _, e := range v {
			s, ok := e.(string)
			if !ok || typeNames[s] == 0 {
				return 0
			}
			set |= typeNames[s]
		}
		return set
	}
	return 0
}

// fastCheck walks the arguments (a valid JSON document) against one
// schema.
type fastCheck struct {
	lx       jsonlex.Lexer
	values   int64
	optional map[string]bool // the root's optional properties: a null there is an omitted argument
}

// accepts reports whether args match n for certain (false: the full
// validation decides). valid says args are known to be valid JSON (the
// call's check of them); otherwise they are validated here first.
func (n *fastNode) accepts(args []byte, valid bool, optional map[string]bool, cost int64) bool {
	if !valid && !json.Valid(args) {
		return false
	}
	fc := fastCheck{lx: jsonlex.New(args), optional: optional}
	kind, raw := fc.lx.Next()
	if !fc.value(n, kind, raw, true) {
		return false
	}
	// The full path refuses arguments with more values than the work
	// bound allows; this count is never below its count.
	return fc.values*max(cost, 1) <= secureparams.MaxValidationWork
}

// value checks the value that starts with the token kind, raw.
func (fc *fastCheck) value(n *fastNode, kind jsonlex.Kind, raw []byte, root bool) bool {
	fc.values++
	switch kind {
	case jsonlex.ObjectStart:
		return n.types&tObject != 0 && n.enum == nil && fc.object(n, root)
	case jsonlex.ArrayStart:
		return n.types&tArray != 0 && n.enum == nil && fc.array(n)
	case jsonlex.String:
		if n.types&tString == 0 {
			return false
		}
		if n.enum == nil {
			return true
		}
		if !jsonlex.PlainString(raw) {
			return false
		}
		text := raw[1 : len(raw)-1]
		for _, e := range n.enum {
			if string(text) == e {
				return true
			}
		}
		return false
	case jsonlex.Scalar:
		if n.enum != nil {
			return false
		}
		switch raw[0] {
		case 'n':
			return n.types&tNull != 0
		case 't', 'f':
			return n.types&tBoolean != 0
		}
		if !safeschema.NumberOK(string(raw)) {
			return false
		}
		if n.types&tNumber != 0 {
			return true
		}
		return n.types&tInteger != 0 && !bytes.ContainsAny(raw, ".eE")
	}
	return false
}

// object checks an object's members (the '{' was read).
func (fc *fastCheck) object(n *fastNode, root bool) bool {
	var seen uint64 // bit i: required[i] is present
	for {
		kind, raw := fc.lx.Next()
		if kind == jsonlex.ObjectEnd {
			break
		}
		if kind != jsonlex.Key || !jsonlex.PlainString(raw) {
			return false
		}
		name := raw[1 : len(raw)-1]
		kind, vraw := fc.lx.Next()
		if root && kind == jsonlex.Scalar && vraw[0] == 'n' && fc.optional[string(name)] {
			fc.values++
			continue // an omitted optional argument
		}
		p := n.props[string(name)]
		if p == nil {
			if !n.additional {
				return false
			}
			if !fc.skipValue(kind, vraw) {
				return false
			}
			continue
		}
		if !fc.value(p, kind, vraw, false) {
			return false
		}
		for i, r := range n.required {
			if string(name) == r {
				seen |= 1 << i
			}
		}
	}
	return seen == 1<<len(n.required)-1
}

// array checks an array's items (the '[' was read).
func (fc *fastCheck) array(n *fastNode) bool {
	items := n.items
	if items == nil {
		items = &anyValue
	}
	for {
		kind, raw := fc.lx.Next()
		if kind == jsonlex.ArrayEnd {
			return true
		}
		if !fc.value(items, kind, raw, false) {
			return false
		}
	}
}

// skipValue moves past the value that starts with the token kind, raw,
// which any value may be, counting its values and checking its numbers as
// the full path does.
func (fc *fastCheck) skipValue(kind jsonlex.Kind, raw []byte) bool {
	depth := 0
	for {
		switch kind {
		case jsonlex.End, jsonlex.Key:
			return false
		case jsonlex.ObjectStart, jsonlex.ArrayStart:
			depth++
			fc.values++
		case jsonlex.ObjectEnd, jsonlex.ArrayEnd:
			depth--
		case jsonlex.String:
			fc.values++
		case jsonlex.Scalar:
			fc.values++
			if raw[0] != 'n' && raw[0] != 't' && raw[0] != 'f' && !safeschema.NumberOK(string(raw)) {
				return false
			}
		}
		if depth == 0 {
			return true
		}
		for kind, raw = fc.lx.Next(); kind == jsonlex.Key; kind, raw = fc.lx.Next() {
		}
	}
}
