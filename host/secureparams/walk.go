package secureparams

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// Keywords holding subschemas that apply to other instances than the one at
// hand (property values, array items) or to nothing directly ($defs). Only a
// deep walk visits them: the call-time guard refuses a secure name at any
// depth of the arguments, so inputSchema counts names at any depth.
var (
	otherInstanceKeywords = []string{
		"additionalProperties", "unevaluatedProperties", "unevaluatedItems",
		"contains", "additionalItems", "contentSchema",
	}
	definitionKeywords = []string{"$defs", "definitions"}
)

// foundName records where a property name was first seen: at the JSON
// pointer ptr + "/" + kw + "/" + key (key escaped), rendered only for a
// message (see where), since a schema's names are many and its problems few.
type foundName struct {
	name         string
	ptr, kw, key string
	required     bool
}

// where is the JSON pointer at which the name was seen.
func (n foundName) where() string {
	return n.ptr + "/" + n.kw + "/" + schemajson.EscapePointer(n.key)
}

// foundPattern is a compiled patternProperties key and where it was seen.
type foundPattern struct {
	source string
	re     *regexp.Regexp
	at     string
}

// schemaWalker walks a decoded schema, following local references, and
// collects the property names and patterns it declares. It is bounded by the
// visited set (each location once per mode, so $ref cycles end), by depth
// and by a visit budget.
type schemaWalker struct {
	label   string
	root    any
	anchors map[string]string
	// deep walks every subschema (inputSchema). Otherwise only in-place
	// applicators are walked (secureInputSchema): those declare top-level
	// names of the same secureArguments object.
	deep   bool
	visits int
	seen   map[visitKey]bool

	names    []foundName
	patterns []foundPattern
	// required holds names required unconditionally (root required, allOf,
	// $ref chains); only tracked when !deep.
	required []foundName
}

// visitKey is a location visited in one mode.
type visitKey struct {
	ptr             string
	collect, uncond bool
}

func newWalker(label string, root any, anchors map[string]string, deep bool) *schemaWalker {
	return &schemaWalker{label: label, root: root, anchors: anchors, deep: deep, seen: map[visitKey]bool{}}
}

// walk visits the schema at ptr. collect says whether property names found
// here count (they do not under propertyNames, which constrains names rather
// than declaring them); uncond says whether every instance must satisfy this
// subschema.
func (w *schemaWalker) walk(node any, ptr string, depth int, collect, uncond bool) *problem {
	if depth > MaxSchemaDepth {
		return newProblem(RuleLimits, "%s nests subschemas more than %d levels deep (at %s)", w.label, MaxSchemaDepth, schemajson.At(ptr))
	}
	key := visitKey{ptr: ptr, collect: collect, uncond: uncond}
	if w.seen[key] {
		return nil
	}
	w.seen[key] = true
	w.visits++
	if w.visits > MaxSchemaNodes {
		return newProblem(RuleLimits, "%s has more than %d subschemas to check", w.label, MaxSchemaNodes)
	}

	var obj map[string]any
	switch v := node.(type) {
	case bool:
		return nil
	case map[string]any:
		obj = v
	default:
		return newProblem(RuleMalformed, "%s has a value that is not a schema at %s", w.label, schemajson.At(ptr))
	}

	if leafShortcut && onepass.ReadsNothing(obj) {
		return nil
	}
	if ref, ok := obj["$ref"]; ok {
		if p := w.followRef(ref, ptr, depth, collect, uncond); p != nil {
			return p
		}
	}
	if p := w.declaredNames(obj, ptr, collect, uncond); p != nil {
		return p
	}
	if p := w.patternProperties(obj, ptr, depth, collect); p != nil {
		return p
	}

	// In-place applicators: they apply to the same instance.
	for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
		if p := w.schemaArray(obj, kw, ptr, depth, collect, uncond && kw == "allOf"); p != nil {
			return p
		}
	}
	for _, kw := range []string{"not", "if", "then", "else"} {
		if sub, ok := obj[kw]; ok {
			if p := w.walk(sub, ptr+"/"+kw, depth+1, collect, false); p != nil {
				return p
			}
		}
	}
	if p := w.schemaMap(obj, "dependentSchemas", ptr, depth, collect, false); p != nil {
		return p
	}
	if deps, ok := obj["dependencies"].(map[string]any); ok {
		for _, k := range sortedKeys(deps) {
			if _, isList := deps[k].([]any); isList {
				continue
			}
			if p := w.walk(deps[k], ptr+"/dependencies/"+schemajson.EscapePointer(k), depth+1, collect, false); p != nil {
				return p
			}
		}
	}
	if !w.deep {
		return nil
	}

	// Subschemas for other instances (property values, items, ...): only a
	// deep walk cares.
	if props, ok := obj["properties"].(map[string]any); ok {
		for _, k := range sortedKeys(props) {
			if p := w.walk(props[k], ptr+"/properties/"+schemajson.EscapePointer(k), depth+1, collect, false); p != nil {
				return p
			}
		}
	}
	for _, kw := range otherInstanceKeywords {
		if sub, ok := obj[kw]; ok {
			if p := w.walk(sub, ptr+"/"+kw, depth+1, collect, false); p != nil {
				return p
			}
		}
	}
	if sub, ok := obj["propertyNames"]; ok {
		if p := w.walk(sub, ptr+"/propertyNames", depth+1, false, false); p != nil {
			return p
		}
	}
	switch items := obj["items"].(type) {
	case []any:
		if p := w.schemaArray(obj, "items", ptr, depth, collect, false); p != nil {
			return p
		}
	case nil:
	default:
		if p := w.walk(items, ptr+"/items", depth+1, collect, false); p != nil {
			return p
		}
	}
	if p := w.schemaArray(obj, "prefixItems", ptr, depth, collect, false); p != nil {
		return p
	}
	for _, kw := range definitionKeywords {
		if p := w.schemaMap(obj, kw, ptr, depth, collect, false); p != nil {
			return p
		}
	}
	return nil
}

// leafShortcut lets the walker skip the schema
// objects onepass.ReadsNothing accepts. Only FuzzLeafShortcut turns it off, to
// compare with the analysis that looks every keyword up.
var leafShortcut = true

// declaredNames records the property names a schema object mentions: properties
// keys, required, dependentRequired (both sides), dependentSchemas and
// dependencies keys.
func (w *schemaWalker) declaredNames(obj map[string]any, ptr string, collect, uncond bool) *problem {
	add := func(name, kw, key string) {
		if collect {
			w.names = append(w.names, foundName{name: name, ptr: ptr, kw: kw, key: key})
		}
	}
	if raw, ok := obj["properties"]; ok {
		props, isMap := raw.(map[string]any)
		if !isMap {
			return newProblem(RuleMalformed, "%s has a \"properties\" value that is not an object at %s", w.label, schemajson.At(ptr))
		}
		for _, k := range sortedKeys(props) {
			add(k, "properties", k)
		}
	}
	if raw, ok := obj["required"]; ok {
		names, isList := stringList(raw)
		if !isList {
			return newProblem(RuleMalformed, "%s has a \"required\" value that is not a list of names at %s", w.label, schemajson.At(ptr))
		}
		for i, n := range names {
			index := strconv.Itoa(i)
			if collect {
				w.names = append(w.names, foundName{name: n, ptr: ptr, kw: "required", key: index, required: true})
			}
			if uncond && collect && !w.deep {
				w.required = append(w.required, foundName{name: n, ptr: ptr, kw: "required", key: index})
			}
		}
	}
	if raw, ok := obj["dependentRequired"]; ok {
		deps, isMap := raw.(map[string]any)
		if !isMap {
			return newProblem(RuleMalformed, "%s has a \"dependentRequired\" value that is not an object at %s", w.label, schemajson.At(ptr))
		}
		for _, k := range sortedKeys(deps) {
			add(k, "dependentRequired", k)
			names, isList := stringList(deps[k])
			if !isList {
				return newProblem(RuleMalformed, "%s has a dependentRequired entry that is not a list of names at %s", w.label, ptr+"/dependentRequired/"+schemajson.EscapePointer(k))
			}
			for _, n := range names {
				add(n, "dependentRequired", k)
			}
		}
	}
	for _, kw := range []string{"dependentSchemas", "dependencies"} {
		raw, ok := obj[kw]
		if !ok {
			continue
		}
		deps, isMap := raw.(map[string]any)
		if !isMap {
			return newProblem(RuleMalformed, "%s has a %q value that is not an object at %s", w.label, kw, schemajson.At(ptr))
		}
		for _, k := range sortedKeys(deps) {
			add(k, kw, k)
			if list, isList := deps[k].([]any); isList {
				names, ok := stringList(list)
				if !ok {
					return newProblem(RuleMalformed, "%s has a dependencies entry that is not a list of names at %s", w.label, ptr+"/"+kw+"/"+schemajson.EscapePointer(k))
				}
				for _, n := range names {
					add(n, kw, k)
				}
			}
		}
	}
	return nil
}

// patternProperties compiles each pattern with Go's regexp. JSON Schema
// patterns are ECMA-262; one Go cannot compile (lookaround, backreferences)
// could admit any name, so it fails closed.
func (w *schemaWalker) patternProperties(obj map[string]any, ptr string, depth int, collect bool) *problem {
	raw, ok := obj["patternProperties"]
	if !ok {
		return nil
	}
	pats, isMap := raw.(map[string]any)
	if !isMap {
		return newProblem(RuleMalformed, "%s has a \"patternProperties\" value that is not an object at %s", w.label, schemajson.At(ptr))
	}
	for _, src := range sortedKeys(pats) {
		where := ptr + "/patternProperties/" + schemajson.EscapePointer(src)
		re, err := regexp.Compile(src)
		if err != nil {
			return newProblem(RulePattern, "%s has a patternProperties pattern %q the host cannot compile at %s", w.label, src, where)
		}
		if collect {
			w.patterns = append(w.patterns, foundPattern{source: src, re: re, at: where})
		}
		if w.deep {
			if p := w.walk(pats[src], where, depth+1, collect, false); p != nil {
				return p
			}
		}
	}
	return nil
}

func (w *schemaWalker) schemaArray(obj map[string]any, kw, ptr string, depth int, collect, uncond bool) *problem {
	raw, ok := obj[kw]
	if !ok {
		return nil
	}
	list, isList := raw.([]any)
	if !isList {
		return newProblem(RuleMalformed, "%s has a %q value that is not a list of schemas at %s", w.label, kw, schemajson.At(ptr))
	}
	for i, sub := range list {
		if p := w.walk(sub, ptr+"/"+kw+"/"+strconv.Itoa(i), depth+1, collect, uncond); p != nil {
			return p
		}
	}
	return nil
}

func (w *schemaWalker) schemaMap(obj map[string]any, kw, ptr string, depth int, collect, uncond bool) *problem {
	raw, ok := obj[kw]
	if !ok {
		return nil
	}
	m, isMap := raw.(map[string]any)
	if !isMap {
		return newProblem(RuleMalformed, "%s has a %q value that is not an object at %s", w.label, kw, schemajson.At(ptr))
	}
	for _, k := range sortedKeys(m) {
		if p := w.walk(m[k], ptr+"/"+kw+"/"+schemajson.EscapePointer(k), depth+1, collect, uncond); p != nil {
			return p
		}
	}
	return nil
}

// followRef resolves a same-document reference and walks its target. The
// scan already refused every reference not starting with "#".
func (w *schemaWalker) followRef(ref any, ptr string, depth int, collect, uncond bool) *problem {
	s, ok := ref.(string)
	if !ok {
		return newProblem(RuleMalformed, "%s has a $ref that is not a string at %s", w.label, schemajson.At(ptr))
	}
	target, where, p := w.resolve(s)
	if p != nil {
		return p
	}
	if p := w.refLoop(ptr, target, where); p != nil {
		return p
	}
	return w.walk(target, where, depth+1, collect, uncond)
}

// refLoop reports a $ref chain that comes back to where it started without
// descending into the instance (A refs B refs A, or a schema that refs
// itself). JSON Schema leaves such a loop undefined and validators fail on
// every instance, so the host cannot reason about what it admits.
func (w *schemaWalker) refLoop(from string, target any, where string) *problem {
	chain := map[string]bool{from: true}
	for range MaxSchemaDepth {
		if chain[where] {
			return newProblem(RuleLimits, "%s has a $ref loop that never reaches a schema (at %s)", w.label, schemajson.At(where))
		}
		chain[where] = true
		obj, ok := target.(map[string]any)
		if !ok {
			return nil
		}
		ref, ok := obj["$ref"].(string)
		if !ok {
			return nil
		}
		next, nextPtr, p := w.resolve(ref)
		if p != nil {
			return nil // reported when the walk reaches it
		}
		target, where = next, nextPtr
	}
	return nil
}

// resolve is schemajson.Resolve, with the problem of a reference that
// resolves to nothing.
func (w *schemaWalker) resolve(ref string) (any, string, *problem) {
	node, ptr, ok := schemajson.Resolve(w.root, w.anchors, ref)
	if !ok {
		return nil, "", newProblem(RuleUnresolvedRef, "%s has a $ref %q that does not resolve within the schema", w.label, ref)
	}
	return node, ptr, nil
}

func stringList(raw any) ([]string, bool) {
	list, ok := raw.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
