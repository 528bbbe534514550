// Package valueschema owns the compiled secureInputSchema: compiling it
// (draft 2020-12, nothing fetched), checking host-bound values against it
// with errors that never hold a value, coercing a configured string to a
// declared type, and the cache of compiled schemas a listing shares.
package valueschema

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// secureSchemaURL is the in-memory location the secure schema is compiled
// under. Only the draft metaschemas built into the library resolve besides it.
const secureSchemaURL = "urn:agenthost:secure-input-schema"

// Schema is a compiled secureInputSchema: it checks host-bound values
// before they are sent. It is immutable and safe for concurrent use.
type Schema struct {
	schema     *jsonschema.Schema
	properties map[string]json.RawMessage
	types      map[string][]string // declared "type" of each property

	// valid remembers value sets that passed (by SHA-256, so no value is
	// kept): bound values rarely change between calls, and validation is the
	// costliest step of the call path.
	validMu sync.Mutex
	valid   map[[sha256.Size]byte]struct{}
}

// draft2020 is the meta-schema URI of JSON Schema draft 2020-12.
const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// maxValidMemo bounds the memo of value sets that passed.
const maxValidMemo = 1024

// Compile compiles a secureInputSchema with JSON Schema draft
// 2020-12, which SEP-3221 requires: a root $schema naming any other draft
// (or dialect) is refused, so the tool is excluded rather than validated by
// rules the server chose. Format and content assertions stay off
// (annotations only, the 2020-12 default), and no reference outside the
// document is ever fetched.
func Compile(schema json.RawMessage) (*Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("decoding secureInputSchema: %w", err)
	}
	if root, ok := doc.(map[string]any); ok {
		if meta, ok := root["$schema"]; ok && meta != draft2020 && meta != draft2020+"#" {
			return nil, errors.New("secureInputSchema: $schema must be JSON Schema draft 2020-12 (" + draft2020 + "), as SEP-3221 requires")
		}
	}
	compiled, err := safeschema.Compile(doc, secureSchemaURL, jsonschema.Draft2020)
	if err != nil {
		return nil, fmt.Errorf("compiling secureInputSchema: %w", err)
	}
	vs := &Schema{schema: compiled, properties: map[string]json.RawMessage{}}
	var root struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &root) == nil {
		vs.properties = root.Properties
	}
	vs.types = make(map[string][]string, len(vs.properties))
	for name, raw := range vs.properties {
		var prop struct {
			Type json.RawMessage `json:"type"`
		}
		_ = json.Unmarshal(raw, &prop)
		vs.types[name] = declaredTypes(prop.Type)
	}
	return vs, nil
}

// Properties returns a copy of the top-level property schemas, raw, so the
// host can hand each credential source the schema of the parameter it fills.
func (v *Schema) Properties() map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(v.properties))
	for name, raw := range v.properties {
		out[name] = slices.Clone(raw)
	}
	return out
}

// PropertiesShared returns the top-level property schemas without copying
// them; callers must not modify the map or its values.
func (v *Schema) PropertiesShared() map[string]json.RawMessage { return v.properties }

// ValueError says that a secure value failed validation. It names the
// parameter and the schema keyword, never the value: the validator's own
// messages quote values, so none of its text is kept.
type ValueError struct {
	// Param is the secure parameter at fault; empty when the problem is
	// about secureArguments as a whole.
	Param string
	// Reason names the failed keyword and its schema location.
	Reason string
}

func (e *ValueError) Error() string {
	if e.Param == "" {
		return "secureArguments: " + e.Reason
	}
	return fmt.Sprintf("secure parameter %q: %s", e.Param, e.Reason)
}

// Validate checks values against the schema exactly as they would be sent:
// each value is encoded to JSON and read back first. It returns nil, one
// *ValueError, or several joined (sorted by parameter); use errors.As.
func (v *Schema) Validate(values map[string]any) error {
	key, keyed := fingerprint(values)
	if keyed {
		v.validMu.Lock()
		_, ok := v.valid[key]
		v.validMu.Unlock()
		if ok {
			return nil
		}
	}
	if err := v.validate(values); err != nil {
		return err
	}
	if keyed {
		v.validMu.Lock()
		if v.valid == nil || len(v.valid) >= maxValidMemo {
			v.valid = make(map[[sha256.Size]byte]struct{})
		}
		v.valid[key] = struct{}{}
		v.validMu.Unlock()
	}
	return nil
}

// fingerprint hashes a value set whose values are strings, numbers or
// booleans (the bound values' shapes); other sets are not memoised.
func fingerprint(values map[string]any) ([sha256.Size]byte, bool) {
	var buf []byte
	for _, name := range slices.Sorted(maps.Keys(values)) {
		buf = strconv.AppendQuote(buf, name)
		buf = append(buf, '=')
		switch v := values[name].(type) {
		case string:
			buf = append(buf, 's')
			buf = strconv.AppendQuote(buf, v)
		case int64:
			buf = append(buf, 'i')
			buf = strconv.AppendInt(buf, v, 10)
		case float64:
			buf = append(buf, 'f')
			buf = strconv.AppendFloat(buf, v, 'g', -1, 64)
		case bool:
			buf = append(buf, 'b')
			buf = strconv.AppendBool(buf, v)
		default:
			return [sha256.Size]byte{}, false
		}
		buf = append(buf, ';')
	}
	return sha256.Sum256(buf), true
}

func (v *Schema) validate(values map[string]any) error {
	instance := make(map[string]any, len(values))
	var encodeErrs []error
	for _, name := range slices.Sorted(maps.Keys(values)) {
		encoded, err := json.Marshal(values[name])
		if err != nil {
			// json's message may quote the value; drop it.
			encodeErrs = append(encodeErrs, &ValueError{Param: name, Reason: "value cannot be encoded as JSON"})
			continue
		}
		decoded, err := jsonschema.UnmarshalJSON(bytes.NewReader(encoded))
		if err != nil {
			encodeErrs = append(encodeErrs, &ValueError{Param: name, Reason: "value cannot be encoded as JSON"})
			continue
		}
		if _, err := safeschema.CheckNumbers(decoded); err != nil {
			encodeErrs = append(encodeErrs, &ValueError{Param: name, Reason: fmt.Sprintf("holds a number the validator cannot handle (more than %d characters or an exponent beyond ±%d)", safeschema.MaxNumberLength, safeschema.MaxNumberExponent)})
			continue
		}
		instance[name] = decoded
	}
	if len(encodeErrs) > 0 {
		return errors.Join(encodeErrs...)
	}
	err := safeschema.Validate(v.schema, instance)
	if err == nil {
		return nil
	}
	if errors.Is(err, safeschema.ErrValidatorPanic) {
		return &ValueError{Reason: "validation failed: " + err.Error()}
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return &ValueError{Reason: "validation failed"}
	}
	errs := valueErrors(verr)
	if len(errs) == 1 {
		return errs[0]
	}
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return errors.Join(joined...)
}

// valueErrors turns the validator's error tree into value-free errors: one
// per failing leaf, deduplicated, sorted by parameter then reason.
func valueErrors(root *jsonschema.ValidationError) []*ValueError {
	var out []*ValueError
	seen := map[string]bool{}
	add := func(param, reason string) {
		if k := param + "\x00" + reason; !seen[k] {
			seen[k] = true
			out = append(out, &ValueError{Param: param, Reason: reason})
		}
	}
	var visit func(e *jsonschema.ValidationError)
	visit = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				visit(c)
			}
			return
		}
		location := keywordLocation(e)
		atRoot := len(e.InstanceLocation) == 0
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			if atRoot {
				for _, name := range k.Missing {
					add(name, fmt.Sprintf("required but missing (%s)", location))
				}
				return
			}
			add(param(e), fmt.Sprintf("lacks required properties %s (%s)", quoteAll(k.Missing), location))
			return
		case *kind.DependentRequired:
			if atRoot {
				for _, name := range k.Missing {
					add(name, fmt.Sprintf("required when %q is present but missing (%s)", k.Prop, location))
				}
				return
			}
		case *kind.Dependency:
			if atRoot {
				for _, name := range k.Missing {
					add(name, fmt.Sprintf("required when %q is present but missing (%s)", k.Prop, location))
				}
				return
			}
		case *kind.AdditionalProperties:
			// At the root the extra names are secureArguments keys, which
			// the host chose; inside a value they are the value's own keys.
			if atRoot {
				for _, name := range k.Properties {
					add(name, fmt.Sprintf("not allowed by the schema (%s)", location))
				}
				return
			}
		case *kind.Type:
			add(param(e), fmt.Sprintf("does not have the type %s (%s)", strings.Join(k.Want, " or "), location))
			return
		}
		add(param(e), fmt.Sprintf("does not satisfy %q (%s)", keyword(e), location))
	}
	visit(root)
	slices.SortFunc(out, func(a, b *ValueError) int {
		if c := strings.Compare(a.Param, b.Param); c != 0 {
			return c
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	if len(out) == 0 {
		out = append(out, &ValueError{Reason: "validation failed"})
	}
	return out
}

// param is the top-level secure parameter an error is about. Deeper
// instance locations are not used: below the parameter they are keys of the
// value itself.
func param(e *jsonschema.ValidationError) string {
	if len(e.InstanceLocation) == 0 {
		return ""
	}
	return e.InstanceLocation[0]
}

func keyword(e *jsonschema.ValidationError) string {
	if path := e.ErrorKind.KeywordPath(); len(path) > 0 {
		return path[0]
	}
	// Kinds that report no keyword path of their own.
	switch e.ErrorKind.(type) {
	case *kind.Not:
		return "not"
	case *kind.FalseSchema:
		return "false"
	}
	return "schema"
}

// keywordLocation is where in the schema the failing keyword sits, e.g.
// "schema location /properties/region/enum". It comes from the schema's own
// structure, never from the instance.
func keywordLocation(e *jsonschema.ValidationError) string {
	frag := ""
	if i := strings.IndexByte(e.SchemaURL, '#'); i >= 0 {
		frag = e.SchemaURL[i+1:]
	}
	path := slices.Clone(e.ErrorKind.KeywordPath())
	if _, isNot := e.ErrorKind.(*kind.Not); isNot {
		path = []string{"not"}
	}
	for i := range path {
		path[i] = schemajson.EscapePointer(path[i])
	}
	if len(path) > 0 {
		frag += "/" + strings.Join(path, "/")
	}
	if frag == "" {
		frag = "/"
	}
	return "schema location " + frag
}

// Coerce converts a credential source's string to the JSON type the
// parameter's schema declares. When the declared types admit a string (or
// none is declared) the string is kept as is. Otherwise it becomes, by the
// first declared type it parses as: int64 for "integer", float64 for
// "number", bool for "boolean" ("true"/"false", any case), or decoded JSON
// for "object"/"array". Errors never contain the value.
func (v *Schema) Coerce(param, value string) (any, error) {
	types, ok := v.types[param]
	if !ok {
		return nil, &ValueError{Param: param, Reason: "not declared in secureInputSchema"}
	}
	if len(types) == 0 || slices.Contains(types, "string") {
		return value, nil
	}
	for _, typ := range types {
		if out, ok := coerceTo(typ, value); ok {
			return out, nil
		}
	}
	return nil, &ValueError{Param: param, Reason: fmt.Sprintf("value is not a valid %s", strings.Join(types, " or "))}
}

func declaredTypes(raw json.RawMessage) []string {
	var single string
	if json.Unmarshal(raw, &single) == nil {
		return []string{single}
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	return nil
}

func coerceTo(typ, value string) (any, bool) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(value, 10, 64)
		return n, err == nil
	case "number":
		f, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		return f, true
	case "boolean":
		switch {
		case strings.EqualFold(value, "true"):
			return true, true
		case strings.EqualFold(value, "false"):
			return false, true
		}
	case "null":
		if value == "null" {
			return nil, true
		}
	case "object", "array":
		decoded, err := jsonschema.UnmarshalJSON(strings.NewReader(value))
		if err != nil {
			return nil, false
		}
		_, isObject := decoded.(map[string]any)
		_, isArray := decoded.([]any)
		return decoded, (typ == "object" && isObject) || (typ == "array" && isArray)
	}
	return nil, false
}

func quoteAll(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// Cache shares compiled secure schemas between the tools of one
// listing (see ListedTool.Parse): a server typically declares one
// secureInputSchema for all of its tools, and compiling it is by far the
// costliest part of validating a definition. A compiled schema depends on
// the schema's bytes only, and a Schema is immutable (its memo of value
// sets that passed holds for any tool with the same schema). It is safe for
// concurrent use; its size is bounded by the listing.
type Cache struct {
	mu      sync.Mutex
	entries map[string]*compiledEntry
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{entries: map[string]*compiledEntry{}}
}

type compiledEntry struct {
	once   sync.Once
	schema *Schema
	err    error

	sureOnce sync.Once
	sure     bool // Sure(schema)
}

func (c *Cache) entry(schema json.RawMessage) *compiledEntry {
	c.mu.Lock()
	e, ok := c.entries[string(schema)]
	if !ok {
		e = &compiledEntry{}
		c.entries[string(schema)] = e
	}
	c.mu.Unlock()
	return e
}

// Get returns the compiled schema, compiling it on first use.
func (c *Cache) Get(schema json.RawMessage) (*Schema, error) {
	e := c.entry(schema)
	e.once.Do(func() { e.schema, e.err = Compile(schema) })
	return e.schema, e.err
}

// Check returns Compile's error for schema, or nil when it compiles, without
// compiling it when Sure answers for it (Get compiles it on first use then);
// otherwise it compiles it now, as Get does.
func (c *Cache) Check(schema json.RawMessage) error {
	e := c.entry(schema)
	e.sureOnce.Do(func() { e.sure = Sure(schema) })
	if e.sure {
		return nil
	}
	_, err := c.Get(schema)
	return err
}
