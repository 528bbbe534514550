package toolset

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// SecureSchema is what the server understands of a secureInputSchema: the
// top-level properties, their declared types, and required names. Anything
// else is served verbatim but not enforced ("validate minimally").
type SecureSchema struct {
	parsed     bool // false when the schema is not an object with readable fields
	Properties map[string]secureProperty
	required   []string
	closed     bool // additionalProperties: false
}

type secureProperty struct {
	types  []string // JSON Schema "type", string or array form
	header string   // x-mcp-header annotation
}

func parseSecureSchema(raw json.RawMessage) *SecureSchema {
	var doc struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties json.RawMessage            `json:"additionalProperties"`
	}
	s := &SecureSchema{Properties: map[string]secureProperty{}}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return s
	}
	s.parsed = true
	s.required = doc.Required
	s.closed = bytes.Equal(bytes.TrimSpace(doc.AdditionalProperties), []byte("false"))
	for name, propRaw := range doc.Properties {
		s.Properties[name] = parseProperty(propRaw)
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
func (s *SecureSchema) requiresValues() bool { return !s.parsed || len(s.required) > 0 }

// Negotiated reports whether a client's declared extensions include one the
// server advertises.
func Negotiated(advertised []string, declared map[string]json.RawMessage) bool {
	for id, v := range declared {
		if slices.Contains(advertised, id) && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return true
		}
	}
	return false
}

// MissingCapability is the -32021 shape of SEP-3221 section 7.
func MissingCapability(advertised []string) *wire.RPCError {
	id := wire.SecureParamsExtension
	if len(advertised) > 0 {
		id = advertised[0]
	}
	return wire.WithData(wire.Errorf(wire.CodeMissingCapability, "Missing required client capability: %s", id), map[string]any{
		"requiredCapabilities": map[string]any{"extensions": map[string]any{id: map[string]any{}}},
	})

}

// ValidateCall applies SEP-3221 section 5 and the minimal schema checks.
// Messages name parameters, never values.
func ValidateCall(s *SecureSchema, args map[string]json.RawMessage, secureArgs map[string]json.RawMessage) *wire.RPCError {
	for _, name := range wire.SortedKeys(args) {
		if _, isSecure := s.Properties[name]; isSecure || slices.Contains(s.required, name) {
			return wire.Errorf(wire.CodeInvalidParams, "parameter %q is secure and must not be passed in arguments", name)
		}
	}
	for _, name := range s.required {
		if _, ok := secureArgs[name]; !ok {
			return wire.Errorf(wire.CodeInvalidParams, "missing required secure parameter %q in secureArguments", name)
		}
	}
	for _, name := range wire.SortedKeys(secureArgs) {
		prop, declared := s.Properties[name]
		if !declared {
			if s.closed {
				return wire.Errorf(wire.CodeInvalidParams, "unknown secure parameter %q in secureArguments", name)
			}
			continue
		}
		if len(prop.types) > 0 && !slices.ContainsFunc(prop.types, func(t string) bool { return jsonHasType(secureArgs[name], t) }) {
			return wire.Errorf(wire.CodeInvalidParams, "secure parameter %q must be of type %s", name, strings.Join(prop.types, " or "))
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

// ValidateParamHeaders checks SEP-2243 x-mcp-header mirroring on modern HTTP
// requests: for every annotated property of inputSchema (from arguments) and
// secureInputSchema (from secureArguments), the Mcp-Param-* header must be
// present exactly when the value is (and is not null), and carry the same
// value.
func ValidateParamHeaders(t *Tool, header http.Header, args, secureArgs map[string]json.RawMessage) *wire.RPCError {
	check := func(props map[string]secureProperty, values map[string]json.RawMessage) *wire.RPCError {
		for _, name := range wire.SortedKeys(props) {
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
				return wire.Errorf(wire.CodeHeaderMismatch, "header %s is present but parameter %q is not", headerKey, name)
			case has && !present:
				return wire.Errorf(wire.CodeHeaderMismatch, "header %s is required for parameter %q", headerKey, name)
			case has && !wire.HeaderMatches(got, value):
				return wire.Errorf(wire.CodeHeaderMismatch, "header %s does not match parameter %q", headerKey, name)
			}
		}
		return nil
	}
	if err := check(inputSchemaProperties(t), args); err != nil {
		return err
	}
	if t.Secure != nil {
		return check(t.Secure.Properties, secureArgs)
	}
	return nil
}

func inputSchemaProperties(t *Tool) map[string]secureProperty {
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	props := map[string]secureProperty{}
	if json.Unmarshal(t.Fields["inputSchema"], &schema) != nil {
		return props
	}
	for name, raw := range schema.Properties {
		props[name] = parseProperty(raw)
	}
	return props
}
