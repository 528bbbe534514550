// Package onepass owns the single validating token pass over a tool
// definition that lets secureparams decide the common clean tool without
// decoding its schemas into maps, and the JSON Schema keyword tables both
// that pass and the full analysis read (FanOutKeyword, ReadsKeyword).
//
// Scan reads the definition once, with the lexer, and collects what the
// checks of a clean tool need: the top-level members, duplicate keys
// anywhere, inputSchema's JSON value count, nesting and numbers, the
// property names its schemas declare or require, and the $refs with what
// they point at, from which the validation cost follows. It answers only for
// the shape it can decide exactly (no fan-out keyword, no anchor or
// embedded resource, no x-mcp-header, local $refs only to root $defs
// entries that hold no $ref); for anything else it declines, and the
// caller runs the full analysis, which stays the reference
// (FuzzSinglePass compares both).
package onepass

import (
	"strings"
	"sync"

	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
	"github.com/agenthost/agenthost/internal/jsonlex"
	"github.com/agenthost/agenthost/internal/safeschema"
)

// FanOutKeyword reports the keywords through which more than one subschema
// can apply to one value, "$ref" aside, and the two that give array items
// two subschemas at once.
func FanOutKeyword(name string) bool {
	switch name {
	case "allOf", "anyOf", "oneOf", "not", "if", "then", "else", "dependentSchemas", "dependencies",
		"patternProperties", "unevaluatedProperties", "unevaluatedItems", "contains", "propertyNames",
		"additionalItems", "prefixItems":
		return true
	}
	return false
}

// ReadsNothing reports whether a decoded schema object has none of the
// members the walker and the expansion analysis read (most leaf schemas,
// such as {"type": "string", "description": "..."}): both then have
// nothing to do there.
func ReadsNothing(obj map[string]any) bool {
	for k := range obj {
		if ReadsKeyword(k) {
			return false
		}
	}
	return true
}

// ReadsKeyword reports whether the schema walker or the expansion analysis
// reads a schema object's member k.
func ReadsKeyword(k string) bool {
	switch k {
	case "$ref", "properties", "required", "dependentRequired", "dependentSchemas", "dependencies",
		"patternProperties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
		"additionalProperties", "unevaluatedProperties", "unevaluatedItems", "contains", "additionalItems",
		"contentSchema", "propertyNames", "items", "prefixItems", "$defs", "definitions":
		return true
	}
	return false
}

// declines reports the member names, anywhere in inputSchema, that make the
// pass leave the tool to the full analysis: fan-out, anchors, embedded
// resources, dynamic references and header annotations.
func declines(name string) bool {
	switch name {
	case "$id", "$anchor", "$dynamicAnchor", "$dynamicRef", "$recursiveRef", "x-mcp-header":
		return true
	}
	return FanOutKeyword(name)
}

// Limits are the bounds the caller enforces, so that the pass declines
// every schema at or beyond them.
type Limits struct {
	// MaxJSONDepth bounds inputSchema's raw nesting.
	MaxJSONDepth int
	// MaxSchemaDepth bounds its subschema nesting (the caller leaves room
	// for one $ref level on top).
	MaxSchemaDepth int
	// MaxNodes bounds its JSON values.
	MaxNodes int
	// MaxArgumentDepth is the argument nesting up to which a $ref counts
	// for the validation cost.
	MaxArgumentDepth int
	// MaxSchemaText bounds inputSchema's text.
	MaxSchemaText int
	// CheckedMember, when not empty (and not inputSchema), is a top-level
	// member whose object value the caller may have seen whole before and
	// found free of repeated keys: when Checked reports true for the
	// value, the pass skips it instead of reading its tokens.
	CheckedMember string
	Checked       func(value []byte) bool
}

// Facts are what the pass learnt about a definition it answers for.
type Facts struct {
	// Fields are the definition's top-level members in order, as
	// jsonlex.ObjectMembers gives them (names share the definition's memory).
	Fields []jsonlex.Member
	// HasInput: the definition has an inputSchema (a JSON object).
	HasInput bool
	// InputNodes is inputSchema's JSON value count.
	InputNodes int
	// Names are the property names inputSchema's schemas declare (properties
	// keys) or require (required, dependentRequired), in document order,
	// repeats kept; they share the definition's memory.
	Names []string
	// Cost is inputSchema's validation cost for one value: 2 when a $ref
	// to a schema object applies within MaxArgumentDepth levels of
	// arguments, else 1.
	Cost int64
	// Type, Properties and Required are the raw values of inputSchema's
	// root members of those names (nil when absent; a repeated key makes
	// the pass decline), for the model's parameters.
	Type, Properties, Required []byte

	owner *pass
}

// role is what a container of the definition is to the pass.
type role uint8

const (
	rTop        role = iota // the definition object
	rOutside                // outside inputSchema: duplicate keys only
	rSchema                 // a schema object of inputSchema
	rSchemaMap              // properties, $defs, definitions: values are schemas
	rSchemaList             // items as a list
	rNames                  // required, a dependentRequired entry: a list of names
	rDepReq                 // dependentRequired: an object of name lists
	rData                   // a keyword value that is not a schema
)

type frame struct {
	object bool
	role   role
	// The object's member names are keys[keysFrom:], or large once many.
	keysFrom int
	large    map[string]struct{}
	// key is the member being read.
	key string

	// sdepth is the subschema depth (a schema map: its owner's); jdepth the
	// JSON depth within inputSchema.
	sdepth, jdepth int
	// from is where the container starts in the definition.
	from int
	// argDepth and reach: the argument level of the value this schema
	// applies to, and whether it is reached from the root through
	// properties, additionalProperties and items only (where a $ref counts
	// for the cost).
	argDepth int
	reach    bool
	// names: a properties map (its keys are names); defs: the root's
	// $defs or definitions.
	names, defs bool

	// For a schema object: its $ref target, whether it has one, and
	// whether it has another member the analysis reads.
	ref          defsKey
	hasRef       bool
	readsOther   bool
	entry        defsKey // a root $defs entry's keyword and name
	refsAtStart  int
	defsKeyword  string
	isRootSchema bool
}

type entry struct {
	object, hasRef bool
}

type holder struct {
	target defsKey
	counts bool
}

// defsKey names a root $defs or definitions entry: the keyword and the
// entry's name (kw is "" for none). A struct, not "kw/name", so that
// naming one costs no allocation.
type defsKey struct {
	kw, name string
}

// pass is Scan's state.
type pass struct {
	lim Limits
	// stackHigh is the most of stack ever in use (what release clears).
	stackHigh int

	stack   []frame
	keys    []string
	facts   Facts
	refs    int
	entries map[defsKey]entry
	holders []holder
	// plain is the lexer's Plain for the scalar being read (a string's).
	plain bool
}

// Scan makes the pass over def, a JSON object json.Valid accepted (its
// surrounding space trimmed). It returns nil when the definition is
// outside what the pass decides.
func Scan(def []byte, lim Limits) *Facts {
	p := passes.Get().(*pass)
	p.lim = lim
	p.facts.owner = p
	if !p.run(def) || !p.resolve() {
		p.release()
		return nil
	}
	return &p.facts
}

// Release hands the facts' memory to the next Scan; f must not be used
// afterwards.
func (f *Facts) Release() {
	f.owner.release()
}

// passes keeps passes' buffers for reuse; one that grew beyond
// maxPooled entries in a buffer is dropped instead (the pool stays small).
var passes = sync.Pool{New: func() any {
	return &pass{stack: make([]frame, 0, 16), keys: make([]string, 0, 32)}
}}

const maxPooled = 1024

func (p *pass) release() {
	if cap(p.stack) > maxPooled || cap(p.keys) > maxPooled || cap(p.facts.Names) > maxPooled ||
		cap(p.facts.Fields) > maxPooled || cap(p.holders) > maxPooled || len(p.entries) > maxPooled {
		return
	}
	// Nothing of the definition stays reachable from the pool.
	clear(p.stack[:p.stackHigh])
	clear(p.keys[:cap(p.keys)])
	clear(p.holders)
	clear(p.facts.Names)
	clear(p.facts.Fields)
	clear(p.entries)
	*p = pass{
		stack: p.stack[:0], keys: p.keys[:0], entries: p.entries, holders: p.holders[:0],
		facts: Facts{Fields: p.facts.Fields[:0], Names: p.facts.Names[:0]}, // Type and the rest: nil
	}
	passes.Put(p)
}

// resolve checks every $ref target once the whole schema is read, and
// sets the cost.
func (p *pass) resolve() bool {
	for _, m := range p.facts.Fields {
		if m.Key == "inputSchema" && len(m.Value) > p.lim.MaxSchemaText {
			return false
		}
	}
	for _, h := range p.holders {
		e, ok := p.entries[h.target]
		if !ok || e.hasRef {
			return false
		}
		if h.counts && e.object {
			p.facts.Cost = 2
		}
	}
	return true
}

func (p *pass) run(def []byte) bool {
	p.facts.Cost = 1
	lx := jsonlex.New(def)
	fieldStart := -1
	for {
		kind, raw := lx.Next()
		n := len(p.stack)
		switch kind {
		case jsonlex.End:
			return true
		case jsonlex.Key:
			f := &p.stack[n-1]
			name := schemajson.ViewPlain(raw, lx.Plain())
			if schemajson.RepeatedKey(&f.large, &p.keys, f.keysFrom, name) {
				return false
			}
			f.key = name
			if f.role == rTop {
				fieldStart = lx.ValueStart()
				if name == p.lim.CheckedMember && name != "inputSchema" && fieldStart < len(def) && def[fieldStart] == '{' {
					before := lx
					lx.SkipValue()
					if value := def[fieldStart:lx.Pos():lx.Pos()]; p.lim.Checked(value) {
						p.facts.Fields = append(p.facts.Fields, jsonlex.Member{Key: name, Value: value})
						fieldStart = -1
						continue
					}
					lx = before
				}
			} else if f.role != rOutside && !p.key(f, name) {
				return false
			}
			continue
		case jsonlex.ObjectEnd, jsonlex.ArrayEnd:
			if !p.end(&p.stack[n-1]) {
				return false
			}
			if n >= 2 && p.stack[n-2].isRootSchema {
				p.rootMember(&p.stack[n-2], def[p.stack[n-1].from:lx.Pos():lx.Pos()])
			}
			p.keys = p.keys[:p.stack[n-1].keysFrom]
			p.stack = p.stack[:n-1]
		default:
			if n == 0 {
				if kind != jsonlex.ObjectStart {
					return false
				}
				p.stack = append(p.stack, frame{object: true, role: rTop})
				p.stackHigh = max(p.stackHigh, 1)
				continue
			}
			if kind != jsonlex.ObjectStart && kind != jsonlex.ArrayStart {
				p.plain = lx.Plain()
				if !p.scalar(&p.stack[n-1], kind, raw) {
					return false
				}
				if p.stack[n-1].isRootSchema {
					p.rootMember(&p.stack[n-1], raw)
				}
				break
			}
			// The container's frame is filled in place, on the stack.
			p.stack = append(p.stack, frame{})
			p.stackHigh = max(p.stackHigh, len(p.stack))
			child := &p.stack[n]
			if !p.open(&p.stack[n-1], child, kind == jsonlex.ObjectStart) {
				return false
			}
			child.object = kind == jsonlex.ObjectStart
			child.keysFrom = len(p.keys)
			child.from = lx.Pos() - 1
			continue
		}
		// A value is complete: a top-level member's ends here.
		if n := len(p.stack); n == 1 && fieldStart >= 0 {
			f := &p.stack[0]
			p.facts.Fields = append(p.facts.Fields, jsonlex.Member{Key: f.key, Value: def[fieldStart:lx.Pos():lx.Pos()]})
			fieldStart = -1
		}
	}
}

// key checks a member name of inputSchema's object f.
func (p *pass) key(f *frame, name string) bool {
	if declines(name) {
		return false
	}
	switch f.role {
	case rSchema:
		if name == "$ref" {
			f.hasRef = true
			p.refs++
			return true
		}
		switch name {
		case "required", "dependentRequired", "contentSchema", "$defs", "definitions":
		default:
			f.readsOther = f.readsOther || ReadsKeyword(name)
		}
	case rSchemaMap:
		if name == "$ref" {
			p.refs++ // a property named $ref: the full analysis decides
			return false
		}
		if f.names {
			p.facts.Names = append(p.facts.Names, name)
		}
	case rDepReq:
		if name == "$ref" {
			return false
		}
		p.facts.Names = append(p.facts.Names, name)
	default:
		if name == "$ref" {
			return false
		}
	}
	return true
}

// open fills c, the zeroed frame of an object (or an array) that opens
// inside the object or array f.
func (p *pass) open(f, c *frame, object bool) bool {
	if f.role == rTop || f.role == rOutside {
		if f.role == rTop && f.key == "inputSchema" {
			if !object || p.facts.HasInput {
				return false
			}
			p.facts.HasInput = true
			p.facts.InputNodes = 1
			c.role, c.reach, c.isRootSchema = rSchema, true, true
			return true
		}
		c.role = rOutside
		return true
	}
	p.facts.InputNodes++
	c.role, c.jdepth = rData, f.jdepth+1
	if p.facts.InputNodes > p.lim.MaxNodes || c.jdepth > p.lim.MaxJSONDepth {
		return false
	}
	switch f.role {
	case rSchema:
		return p.openMember(f, c, object)
	case rSchemaMap:
		if !p.openSchema(c, object, f.sdepth+1, f.argDepth, f.reach) {
			return false
		}
		if f.defs {
			c.entry = defsKey{f.defsKeyword, f.key}
			c.refsAtStart = p.refs
		}
		return true
	case rSchemaList:
		return p.openSchema(c, object, f.sdepth+1, f.argDepth, f.reach)
	case rNames:
		return false // names are strings
	case rDepReq:
		if object {
			return false // its values are lists
		}
		c.role = rNames
	}
	return true // rData
}

// openMember fills c for the container that is the value of member f.key
// of the schema object f.
func (p *pass) openMember(f, c *frame, object bool) bool {
	switch f.key {
	case "$ref":
		return false // a string
	case "properties", "$defs", "definitions":
		if !object {
			return false
		}
		c.role, c.sdepth = rSchemaMap, f.sdepth
		if f.key == "properties" {
			c.names, c.argDepth, c.reach = true, f.argDepth+1, f.reach
		} else if f.isRootSchema {
			c.defs, c.defsKeyword = true, f.key
			if p.entries == nil {
				p.entries = map[defsKey]entry{}
			}
		}
	case "additionalProperties", "items":
		if !object && f.key == "items" {
			c.role, c.sdepth, c.argDepth, c.reach = rSchemaList, f.sdepth, f.argDepth+1, f.reach
			return true
		}
		return p.openSchema(c, object, f.sdepth+1, f.argDepth+1, f.reach)
	case "contentSchema":
		return p.openSchema(c, object, f.sdepth+1, f.argDepth+1, false)
	case "required":
		if object {
			return false
		}
		c.role = rNames
	case "dependentRequired":
		if !object {
			return false
		}
		c.role = rDepReq
	}
	return true
}

// openSchema makes c a schema object's frame, for an object in a schema
// position within the subschema depth; anything else is declined.
func (p *pass) openSchema(c *frame, object bool, sdepth, argDepth int, reach bool) bool {
	if sdepth > p.lim.MaxSchemaDepth || !object {
		return false
	}
	c.role, c.sdepth, c.argDepth, c.reach = rSchema, sdepth, argDepth, reach
	return true
}

// rootMember notes the value of the root schema's member root.key.
func (p *pass) rootMember(root *frame, value []byte) {
	switch root.key {
	case "type":
		p.facts.Type = value
	case "properties":
		p.facts.Properties = value
	case "required":
		p.facts.Required = value
	}
}

// scalar takes a string, number, boolean or null inside the object or
// array f: the checks open makes for a container, for a value that gets
// no frame.
func (p *pass) scalar(f *frame, kind jsonlex.Kind, raw []byte) bool {
	switch f.role {
	case rTop:
		return f.key != "inputSchema" // inputSchema must be an object
	case rOutside:
		return true
	}
	p.facts.InputNodes++
	if p.facts.InputNodes > p.lim.MaxNodes || f.jdepth+1 > p.lim.MaxJSONDepth {
		return false
	}
	if kind == jsonlex.Scalar && !numberOK(raw) {
		return false
	}
	switch f.role {
	case rSchema:
		switch f.key {
		case "$ref":
			if kind != jsonlex.String {
				return false
			}
			target, ok := defsTarget(schemajson.ViewPlain(raw, p.plain))
			if !ok {
				return false
			}
			f.ref = target
			return true
		case "properties", "$defs", "definitions", "required", "dependentRequired":
			return false // each must be a container
		case "additionalProperties", "items", "contentSchema":
			return p.booleanSchema(kind, raw, f.sdepth+1)
		}
		return true
	case rSchemaMap:
		ok := p.booleanSchema(kind, raw, f.sdepth+1)
		if f.defs && kind == jsonlex.Scalar {
			p.entries[defsKey{f.defsKeyword, f.key}] = entry{}
		}
		return ok
	case rSchemaList:
		return p.booleanSchema(kind, raw, f.sdepth+1)
	case rNames:
		if kind != jsonlex.String {
			return false
		}
		p.facts.Names = append(p.facts.Names, schemajson.ViewPlain(raw, p.plain))
		return true
	case rDepReq:
		return false // its values are lists
	}
	return true // rData
}

// booleanSchema reports whether a scalar in a schema position is a
// schema: true or false, within the subschema depth.
func (p *pass) booleanSchema(kind jsonlex.Kind, raw []byte, sdepth int) bool {
	if sdepth > p.lim.MaxSchemaDepth || kind != jsonlex.Scalar {
		return false
	}
	s := string(raw)
	return s == "true" || s == "false"
}

// end closes the container f.
func (p *pass) end(f *frame) bool {
	if f.role != rSchema {
		return true
	}
	if f.hasRef {
		if f.readsOther || f.ref.kw == "" {
			return false
		}
		p.holders = append(p.holders, holder{target: f.ref, counts: f.reach && f.argDepth <= p.lim.MaxArgumentDepth})
	}
	if f.entry.kw != "" {
		p.entries[f.entry] = entry{object: true, hasRef: p.refs > f.refsAtStart}
	}
	return true
}

// defsTarget reads "#/$defs/name" or "#/definitions/name" with a name
// that needs no unescaping; any other reference is the full analysis's.
func defsTarget(ref string) (defsKey, bool) {
	for _, kw := range [...]struct{ prefix, kw string }{{"#/$defs/", "$defs"}, {"#/definitions/", "definitions"}} {
		if name, ok := strings.CutPrefix(ref, kw.prefix); ok && name != "" && !strings.ContainsAny(name, "/~%") {
			return defsKey{kw.kw, name}, true
		}
	}
	return defsKey{}, false
}

// numberOK accepts true, false, null and the numbers the validator can
// handle.
func numberOK(raw []byte) bool {
	switch string(raw) {
	case "true", "false", "null":
		return true
	}
	return safeschema.NumberOK(string(raw))
}
