package llmview

import (
	"bytes"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/internal/jsonlex"
)

// Tool is one tool offered to the model.
type Tool struct {
	Ref
	Description string
	// InputSchema is the tool's inputSchema exactly as the server sent it.
	InputSchema json.RawMessage
	// Parameters, when set, is Parameters(InputSchema) computed earlier
	// (catalogs compute it once per tool definition, not per view).
	Parameters json.RawMessage
}

// Function is one function as the model sees it: the exposed name, the
// server's description and the parameters schema built from inputSchema.
type Function struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// View is what the model sees plus the explicit way back.
type View struct {
	// ByExposed maps an exposed function name to its tool; never recover a
	// tool by splitting the name. Views made by Compose leave it nil: use
	// Lookup.
	ByExposed map[string]Ref
	// Exposed maps a tool to its exposed function name (nil in composed
	// views).
	Exposed map[Ref]string

	tools []Function // a built view's functions, sorted by name
	parts []*View
	n     int // the number of functions, parts included

	flatOnce sync.Once
	flat     []Function // a composed view's functions, joined on first use
}

// Tools returns the functions the model is offered, in order. The slice is
// shared: callers must not modify it. A composed view joins its parts'
// functions on the first call (once per view), so composing a view after
// one part changed costs nothing per function until something, such as a
// model request, needs the whole list.
func (v *View) Tools() []Function {
	if v.parts == nil {
		return v.tools
	}
	v.flatOnce.Do(func() {
		v.flat = make([]Function, 0, v.n)
		for _, p := range v.parts {
			v.flat = append(v.flat, p.Tools()...)
		}
	})
	return v.flat
}

// Len is the number of functions, without joining a composed view's parts.
func (v *View) Len() int { return v.n }

// Parts are the views a composed view was made of, in order (nil for a
// view made by Build). They are shared: callers must not modify them.
func (v *View) Parts() []*View { return v.parts }

// All yields every function the model is offered with the tool it maps
// to, in order, without joining a composed view's parts and with one
// lookup per function (Lookup on a composed view asks each part in turn).
func (v *View) All() iter.Seq2[Function, Ref] {
	return func(yield func(Function, Ref) bool) { v.each(yield) }
}

func (v *View) each(yield func(Function, Ref) bool) bool {
	if v.parts == nil {
		for _, f := range v.tools {
			if !yield(f, v.ByExposed[f.Name]) {
				return false
			}
		}
		return true
	}
	for _, p := range v.parts {
		if !p.each(yield) {
			return false
		}
	}
	return true
}

// Lookup maps an exposed function name back to its tool.
func (v *View) Lookup(name string) (Ref, bool) {
	if v.parts == nil {
		r, ok := v.ByExposed[name]
		return r, ok
	}
	for _, p := range v.parts {
		if r, ok := p.Lookup(name); ok {
			return r, true
		}
	}
	return Ref{}, false
}

// Compose joins views (Build with each server's tools, or earlier
// compositions) into one, in the order given, without copying them: a
// catalog that changes one server rebuilds only that server's part, and
// composing costs one step per part, not per function.
func Compose(parts []*View) *View {
	n := 0
	for _, p := range parts {
		n += p.n
	}
	if parts == nil {
		parts = []*View{}
	}
	return &View{parts: parts, n: n}
}

// Build makes the model view of tools, in a deterministic order (by exposed
// name). names are the exposed names to use (from ExposedNames over a larger
// set, so that a tool keeps its name whatever else is offered); nil computes
// them from tools.
func Build(tools []Tool, names map[Ref]string) *View {
	if names == nil {
		refs := make([]Ref, len(tools))
		for i, t := range tools {
			refs[i] = t.Ref
		}
		names = ExposedNames(refs)
	}
	v := &View{
		tools:     make([]Function, 0, len(tools)),
		ByExposed: make(map[string]Ref, len(tools)),
		Exposed:   make(map[Ref]string, len(tools)),
	}
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b Tool) int { return compareRefs(a.Ref, b.Ref) })
	sorted = slices.CompactFunc(sorted, func(a, b Tool) bool { return a.Ref == b.Ref })
	for _, t := range sorted {
		name, ok := names[t.Ref]
		if !ok {
			continue
		}
		v.ByExposed[name] = t.Ref
		v.Exposed[t.Ref] = name
		v.tools = append(v.tools, Function{Name: name, Description: t.Description, Parameters: t.parameters()})
	}
	slices.SortFunc(v.tools, func(a, b Function) int { return strings.Compare(a.Name, b.Name) })
	v.n = len(v.tools)
	return v
}

func (t Tool) parameters() json.RawMessage {
	if t.Parameters != nil {
		return t.Parameters
	}
	return Parameters(t.InputSchema)
}

// Parameters returns the schema sent to the model as a function's
// parameters: the inputSchema as the server sent it, with only the minimal
// fixes providers need:
//   - absent, null, invalid or non-object schema → {"type":"object","properties":{}};
//   - a root without "type" gets "type":"object";
//   - an object root without "properties" gets "properties":{};
//   - "required": null is dropped.
//
// When no fix is needed the bytes are returned unchanged.
func Parameters(inputSchema json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(inputSchema)
	if len(trimmed) == 0 || trimmed[0] != '{' || !jsonlex.Valid(trimmed) {
		return emptyParameters()
	}
	return ParametersOfValid(trimmed)
}

// ParametersOfValid is Parameters for an inputSchema already known to be
// valid JSON (a host that parsed the definition), without checking it
// again. Whether a fix is needed depends on the root's members only, so it
// reads those without decoding anything and, in the common case, returns
// the bytes as they are.
func ParametersOfValid(inputSchema json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(inputSchema)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return emptyParameters()
	}
	var typ, props, required json.RawMessage
	// The root's members, read in place: the names without a copy when
	// they need no unescaping, the values not at all.
	lx := jsonlex.New(trimmed)
	lx.Next() // '{'
	for {
		kind, raw := lx.Next()
		if kind != jsonlex.Key {
			break
		}
		start := lx.ValueStart()
		lx.SkipValue()
		value := trimmed[start:lx.Pos():lx.Pos()]
		name := raw[1 : len(raw)-1]
		if !jsonlex.PlainString(raw) {
			name = []byte(jsonlex.Unquote(raw))
		}
		switch string(name) { // the last of repeated keys wins, as when decoding
		case "type":
			typ = value
		case "properties":
			props = value
		case "required":
			required = value
		}
	}
	return ParametersOfRoot(trimmed, typ, props, required)
}

// ParametersOfRoot is ParametersOfValid for an object inputSchema whose
// root members "type", "properties" and "required" are known (raw values,
// nil when absent; the last of repeated ones): a host whose own pass over
// the definition read them need not read the schema again.
func ParametersOfRoot(inputSchema, typ, props, required json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(inputSchema)
	needsFix := typ == nil ||
		(string(typ) == `"object"` && (props == nil || string(props) == "null")) ||
		string(required) == "null"
	if !needsFix {
		return trimmed
	}
	return fixParameters(trimmed)
}

func emptyParameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}

// fixParameters applies Parameters' fixes to an object schema that needs
// them; the result is re-encoded (keys sorted).
func fixParameters(schema []byte) json.RawMessage {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(schema, &root); err != nil {
		return emptyParameters()
	}
	if _, ok := root["type"]; !ok {
		root["type"] = json.RawMessage(`"object"`)
	}
	if string(root["type"]) == `"object"` {
		if p, ok := root["properties"]; !ok || string(p) == "null" {
			root["properties"] = json.RawMessage(`{}`)
		}
	}
	if r, ok := root["required"]; ok && string(r) == "null" {
		delete(root, "required")
	}
	out, err := json.Marshal(root)
	if err != nil {
		return emptyParameters()
	}
	return out
}
