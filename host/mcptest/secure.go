package mcptest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// secureSchema is what the server understands of a secureInputSchema: the
// top-level properties, their declared types, and required names. Anything
// else is served verbatim but not enforced ("validate minimally").
type secureSchema struct {
	parsed     bool // false when the schema is not an object with readable fields
	properties map[string]secureProperty
	required   []string
	closed     bool // additionalProperties: false
}

type secureProperty struct {
	types  []string // JSON Schema "type", string or array form
	header string   // x-mcp-header annotation
}

func parseSecureSchema(raw json.RawMessage) *secureSchema {
	var doc struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	s := &secureSchema{properties: map[string]secureProperty{}}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return s
	}
	s.parsed = true
	s.required = doc.Required
	s.closed = bytes.Equal(bytes.TrimSpace(doc.AdditionalProperties), []byte("false"))
	for name, propRaw := range doc.Properties {
		s.properties[name] = parseProperty(propRaw)
	}
	return s
}

func parseProperty(raw json.RawMessage) secureProperty {
	var prop struct {
		Type   json.RawMessage `json:"type"`
		Header string          `json:"x-mcp-header"`
	}
	var p secureProperty
	if json.Unmarshal(raw, &prop) != nil {
		return p
	}
	p.header = prop.Header
	var single string
	if json.Unmarshal(prop.Type, &single) == nil && single != "" {
		p.types = []string{single}
	} else {
		_ = json.Unmarshal(prop.Type, &p.types)
	}
	return p
}

// requiresValues reports whether an un-negotiated client could not call the
// tool; an unreadable schema counts as requiring values (fail closed).
func (s *secureSchema) requiresValues() bool { return !s.parsed || len(s.required) > 0 }

// negotiated reports whether a client's declared extensions include one the
// server advertises.
func negotiated(advertised []string, declared map[string]json.RawMessage) bool {
	for id, v := range declared {
		if slices.Contains(advertised, id) && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return true
		}
	}
	return false
}

// missingCapabilityError is the -32021 shape of SEP-3221 section 7.
func missingCapabilityError(advertised []string) *RPCError {
	id := SecureParamsExtension
	if len(advertised) > 0 {
		id = advertised[0]
	}
	return wire.WithData(wire.Errorf(CodeMissingCapability, "Missing required client capability: %s", id), map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{id: map[string]any{}}},
	})

}

// validateSecureCall applies SEP-3221 section 5 and the minimal schema checks.
// Messages name parameters, never values.
func validateSecureCall(s *secureSchema, args map[string]json.RawMessage, secureArgs map[string]json.RawMessage) *RPCError {
	for _, name := range sortedKeys(args) {
		if _, isSecure := s.properties[name]; isSecure || slices.Contains(s.required, name) {
			return wire.Errorf(CodeInvalidParams, "parameter %q is secure and must not be passed in arguments", name)
		}
	}
	for _, name := range s.required {
		if _, ok := secureArgs[name]; !ok {
			return wire.Errorf(CodeInvalidParams, "missing required secure parameter %q in secureArguments", name)
		}
	}
	for _, name := range sortedKeys(secureArgs) {
		prop, declared := s.properties[name]
		if !declared {
			if s.closed {
				return wire.Errorf(CodeInvalidParams, "unknown secure parameter %q in secureArguments", name)
			}
			continue
		}
		if len(prop.types) > 0 && !slices.ContainsFunc(prop.types, func(t string) bool { return jsonHasType(secureArgs[name], t) }) {
			return wire.Errorf(CodeInvalidParams, "secure parameter %q must be of type %s", name, strings.Join(prop.types, " or "))
		}
	}
	return nil
}

func jsonHasType(raw json.RawMessage, schemaType string) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch schemaType {
	case "string":
		return raw[0] == '"'
	case "boolean":
		return string(raw) == "true" || string(raw) == "false"
	case "null":
		return string(raw) == "null"
	case "object":
		return raw[0] == '{'
	case "array":
		return raw[0] == '['
	case "number", "integer":
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return false
		}
		return schemaType == "number" || (f == math.Trunc(f) && !math.IsInf(f, 0))
	default:
		return true // unknown types are not ours to judge
	}
}

// validateParamHeaders checks SEP-2243 x-mcp-header mirroring on modern HTTP
// requests: for every annotated property of inputSchema (from arguments) and
// secureInputSchema (from secureArguments), the Mcp-Param-* header must be
// present exactly when the value is (and is not null), and carry the same
// value.
func validateParamHeaders(t *tool, header http.Header, args, secureArgs map[string]json.RawMessage) *RPCError {
	check := func(props map[string]secureProperty, values map[string]json.RawMessage) *RPCError {
		for _, name := range sortedKeys(props) {
			prop := props[name]
			if prop.header == "" {
				continue
			}
			headerKey := wire.HeaderParamPrefix + prop.header
			got, present := header.Get(headerKey), len(header.Values(headerKey)) > 0
			value, has := values[name]
			has = has && string(bytes.TrimSpace(value)) != "null" // SEP-2243: a null value has no header
			switch {
			case !has && present:
				return wire.Errorf(CodeHeaderMismatch, "header %s is present but parameter %q is not", headerKey, name)
			case has && !present:
				return wire.Errorf(CodeHeaderMismatch, "header %s is required for parameter %q", headerKey, name)
			case has && !headerMatches(got, value):
				return wire.Errorf(CodeHeaderMismatch, "header %s does not match parameter %q", headerKey, name)
			}
		}
		return nil
	}
	if err := check(inputSchemaProperties(t), args); err != nil {
		return err
	}
	if t.secure != nil {
		return check(t.secure.properties, secureArgs)
	}
	return nil
}

func inputSchemaProperties(t *tool) map[string]secureProperty {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	props := map[string]secureProperty{}
	if json.Unmarshal(t.fields["inputSchema"], &schema) != nil {
		return props
	}
	for name, raw := range schema.Properties {
		props[name] = parseProperty(raw)
	}
	return props
}

// headerMatches compares a header with a JSON value using SEP-2243 encoding:
// strings as-is or =?base64?...?=, integers in decimal, booleans as words.
func headerMatches(header string, value json.RawMessage) bool {
	if inner, ok := strings.CutPrefix(header, "=?base64?"); ok {
		if inner, ok = strings.CutSuffix(inner, "?="); ok {
			decoded, err := base64.StdEncoding.DecodeString(inner)
			if err != nil {
				return false
			}
			header = string(decoded)
		}
	}
	var v any
	if json.Unmarshal(value, &v) != nil {
		return false
	}
	switch v := v.(type) {
	case string:
		return header == v
	case bool:
		return header == strconv.FormatBool(v)
	case float64:
		return v == math.Trunc(v) && header == strconv.FormatInt(int64(v), 10)
	default:
		return false
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decodeObject decodes an optional JSON object parameter.
func decodeObject(raw json.RawMessage, what string) (map[string]json.RawMessage, *RPCError) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	if trimmed[0] != '{' {
		return nil, wire.Errorf(CodeInvalidParams, "%s must be an object", what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, wire.Errorf(CodeInvalidParams, "%s: %v", what, err)
	}
	return m, nil
}

// canonicalJSON re-encodes a value with sorted keys so equal payloads hash
// equally whatever their key order or spacing.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}
