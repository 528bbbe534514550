// Package argschema owns the check of a call's arguments against its
// tool's inputSchema: the compiled schema kept with the definition, the
// work bound, a refusal text that quotes no value of the schema, and the
// fast path that accepts arguments matching a simple schema without the
// validator (fast.go).
package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/secureparams"
	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Checker checks model arguments against tools' inputSchemas before
// anything is sent, compiling each definition's schema once: the compiled
// schema lives in the definition's verdicts (host/policy.go), so it dies with the
// definition and a server that keeps changing its tools does not grow the
// host. A schema that cannot be compiled (for example one with a remote
// $ref, which is never fetched) is not checked here; the server still
// validates.
type Checker struct{}

// Compiled is one compiled inputSchema; s is nil when it is not
// checkable. optional are the top-level properties the schema declares and
// does not require.
type Compiled struct {
	s        *jsonschema.Schema
	optional map[string]bool
	fast     *fastNode // nil: the schema needs the full validation every time (fast.go)
}

// Bounds on what a refusal quotes back: the validator's own output lists
// every failing branch, which for a large anyOf is unbounded.
const (
	maxArgErrorLines    = 8
	maxArgErrorLineSize = 200
)

var argErrorPrinter = message.NewPrinter(language.English)

// get is the compiled schema held in slot, compiling it first when the
// slot is empty; a nil slot (a definition outside a listing) compiles it
// for this call only.
func (a *Checker) get(slot *atomic.Pointer[Compiled], schema json.RawMessage) *Compiled {
	if slot != nil {
		if c := slot.Load(); c != nil {
			return c
		}
	}
	c := &Compiled{}
	if doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema)); err == nil {
		c.s, _ = safeschema.Compile(doc, "mem:///input.json", jsonschema.Draft2020)
		c.optional = optionalProperties(doc)
		if c.s != nil {
			c.fast = compileFast(doc)
		}
	}
	if slot != nil && !slot.CompareAndSwap(nil, c) {
		return slot.Load()
	}
	return c
}

// optionalProperties are the names of a schema's top-level properties that
// its top-level required does not list.
func optionalProperties(schema any) map[string]bool {
	obj, _ := schema.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	if len(props) == 0 {
		return nil
	}
	optional := make(map[string]bool, len(props))
	for name := range props {
		optional[name] = true
	}
	required, _ := obj["required"].([]any)
	for _, r := range required {
		if name, ok := r.(string); ok {
			delete(optional, name)
		}
	}
	return optional
}

// withoutOptionalNulls is the arguments object without its top-level null
// values of optional properties: for the host's check such a null is an
// omitted argument, as SEP-2243 has it (no Mcp-Param-* header for a null
// or omitted value). Clients and models send null for "not given"; the
// arguments go to the server as they were, and the server validates them.
func withoutOptionalNulls(doc any, optional map[string]bool) any {
	obj, ok := doc.(map[string]any)
	if !ok || len(optional) == 0 {
		return doc
	}
	var out map[string]any
	for name, v := range obj {
		if v == nil && optional[name] {
			if out == nil {
				out = maps.Clone(obj)
			}
			delete(out, name)
		}
	}
	if out == nil {
		return doc
	}
	return out
}

// Validate checks model arguments against a tool's inputSchema; the message
// is for the model (it only quotes the model's own input). cost is the
// tool's secureparams ValidationCost: arguments whose JSON values times cost
// exceed secureparams.MaxValidationWork are refused unvalidated. checked
// is the call's one check of its arguments (rules.CheckArgs): the fast
// path does not validate again arguments it vouches for.
func (a *Checker) Validate(slot *atomic.Pointer[Compiled], schema json.RawMessage, cost int64, args json.RawMessage, checked rules.ArgsCheck) error {
	c := a.get(slot, schema)
	if c.s == nil {
		return nil
	}
	if c.fast != nil && c.fast.accepts(args, checked.Valid(args), c.optional, cost) {
		return nil
	}
	return c.validate(cost, args)
}

// validate is Validate's full path: the arguments decoded, their numbers
// and size checked, then the library's validator.
func (c *Compiled) validate(cost int64, args json.RawMessage) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %w", err)
	}
	values, err := safeschema.CheckNumbers(doc)
	if err != nil {
		return fmt.Errorf("arguments cannot be checked against the tool's inputSchema: %w", err)
	}
	if int64(values)*max(cost, 1) > secureparams.MaxValidationWork {
		return fmt.Errorf("arguments are too large to check against the tool's inputSchema (%d JSON values, each costing up to %d subschema checks, exceed the limit of %d checks per call)", values, cost, secureparams.MaxValidationWork)
	}
	if err := safeschema.Validate(c.s, withoutOptionalNulls(doc, c.optional)); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			return fmt.Errorf("arguments do not match the tool's inputSchema: %s", argErrorText(verr))
		}
		return fmt.Errorf("arguments cannot be checked against the tool's inputSchema: %w", err)
	}
	return nil
}

// argKindText says which constraint a value failed without quoting the
// schema's values (enum and const members, patterns, bounds): a server
// that learned a secure value could plant it there, and the model has the
// schema anyway. Only the type vocabulary and property names are named
// (a definition holding a protected value is never offered, see
// taintReason); instance locations are the model's own keys.
func argKindText(k jsonschema.ErrorKind) string {
	switch k.(type) {
	case *kind.Type, *kind.Required, *kind.AdditionalProperties, *kind.FalseSchema:
		return k.LocalizedString(argErrorPrinter)
	case *kind.Enum:
		return "the value is not one of the values the schema allows ('enum')"
	case *kind.Const:
		return "the value is not the one the schema requires ('const')"
	case *kind.Pattern:
		return "the value does not match the schema's 'pattern'"
	}
	return fmt.Sprintf("the value does not satisfy the schema's '%s'", strings.Join(k.KeywordPath(), "/"))
}

// argErrorText renders the validator's error tree as its failing leaves,
// bounded in count and length: "at '/path': message; ...".
func argErrorText(root *jsonschema.ValidationError) string {
	var lines []string
	more := 0
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				visit(c)
			}
			return
		}
		if len(lines) == maxArgErrorLines {
			more++
			return
		}
		line := fmt.Sprintf("at '/%s': %s", strings.Join(e.InstanceLocation, "/"), argKindText(e.ErrorKind))
		if len(line) > maxArgErrorLineSize {
			line = strings.ToValidUTF8(line[:maxArgErrorLineSize], "") + "…"
		}
		lines = append(lines, line)
	}
	visit(root)
	if more > 0 {
		lines = append(lines, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(lines, "; ")
}
