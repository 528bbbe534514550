package valueschema

import (
	"bytes"
	"encoding/json"
	"regexp/syntax"

	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Sure reports whether Compile is certain to accept schema, decided
// without compiling it: the document decodes, holds no number the
// validator cannot handle, and every schema in it uses only keywords whose
// values it can check here against draft 2020-12's metaschema (type,
// properties, additionalProperties, items, required, enum, const, default,
// examples, the annotations, the length, count and numeric bounds, a
// pattern Go's regexp compiles, and x- extensions with a scalar value).
// Anything else ($schema, a reference, an identifier, a combinator, a
// keyword it does not know) answers false, and the caller compiles.
//
// Compiling a secure schema validates it against the metaschema and is by
// far the costliest part of a listing's analysis; a catalog build checks
// with Sure and leaves the compile to the first call that needs the
// compiled schema (Cache.Check). FuzzSureCompiles holds Sure to Compile.
func Sure(schema json.RawMessage) bool {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return false
	}
	if _, err := safeschema.CheckNumbers(doc); err != nil {
		return false
	}
	return sureSchema(doc, 0)
}

// maxSureList bounds the lists Sure checks for duplicates.
const maxSureList = 64

// maxSureDepth bounds the nesting Sure follows; deeper schemas compile.
const maxSureDepth = 32

var simpleTypes = map[string]bool{
	"array": true, "boolean": true, "integer": true, "null": true,
	"number": true, "object": true, "string": true,
}

func sureSchema(v any, depth int) bool {
	switch s := v.(type) {
	case bool:
		return true
	case map[string]any:
		if depth > maxSureDepth {
			return false
		}
		for key, val := range s {
			if !sureKeyword(key, val, depth) {
				return false
			}
		}
		return true
	}
	return false
}

func sureKeyword(key string, val any, depth int) bool {
	switch key {
	case "type":
		if name, ok := val.(string); ok {
			return simpleTypes[name]
		}
		list, ok := val.([]any)
		return ok && len(list) > 0 && uniqueStrings(list, simpleTypes)
	case "properties":
		props, ok := val.(map[string]any)
		if !ok {
			return false
		}
		for _, sub := range props {
			if !sureSchema(sub, depth+1) {
				return false
			}
		}
		return true
	case "additionalProperties", "items":
		return sureSchema(val, depth+1)
	case "required":
		list, ok := val.([]any)
		return ok && uniqueStrings(list, nil)
	case "enum", "examples":
		_, ok := val.([]any)
		return ok
	case "const", "default":
		return true
	case "title", "description", "format", "$comment":
		_, ok := val.(string)
		return ok
	case "readOnly", "writeOnly", "deprecated":
		_, ok := val.(bool)
		return ok
	case "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties":
		return smallCount(val)
	case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
		_, ok := val.(json.Number)
		return ok
	case "pattern":
		p, ok := val.(string)
		if !ok {
			return false
		}
		// regexp.Compile, the library's engine, fails exactly when
		// the parse does (what follows it cannot fail), and the parse
		// does not expand the pattern's repetitions.
		_, err := syntax.Parse(p, syntax.Perl)
		return err == nil
	}
	if len(key) > 2 && key[0] == 'x' && key[1] == '-' {
		switch val.(type) {
		case string, bool, json.Number, nil:
			return true
		}
	}
	return false
}

// uniqueStrings: every element a distinct string (one of allowed, when
// given), as the metaschema's uniqueItems arrays of strings require.
// Longer lists are left to the compiler.
func uniqueStrings(list []any, allowed map[string]bool) bool {
	if len(list) > maxSureList {
		return false
	}
	for i, el := range list {
		s, ok := el.(string)
		if !ok || (allowed != nil && !allowed[s]) {
			return false
		}
		for _, prev := range list[:i] {
			if prev == s {
				return false
			}
		}
	}
	return true
}

// smallCount: a non-negative integer written with at most nine digits, so
// that no conversion of it can overflow.
func smallCount(val any) bool {
	n, ok := val.(json.Number)
	if !ok || len(n) == 0 || len(n) > 9 {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}
