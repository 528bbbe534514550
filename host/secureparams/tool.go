package secureparams

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
	"github.com/agenthost/agenthost/host/secureparams/internal/onepass"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
	"github.com/agenthost/agenthost/internal/jsonlex"
	"github.com/mark3labs/mcp-go/mcp"
)

// defaultInputSchema is what the host assumes when a tool omits inputSchema:
// a tool with no declared arguments.
var defaultInputSchema = json.RawMessage(`{"type":"object"}`)

// ErrMalformedTool is wrapped by ParseTool when a definition cannot be a tool
// at all (not a JSON object, or no string name).
var ErrMalformedTool = errors.New("malformed tool definition")

// HeaderBinding says that secure parameter Param travels in the HTTP header
// Header (the full name, e.g. "Mcp-Param-Region") on Streamable HTTP, as
// declared by an x-mcp-header annotation on a top-level secureInputSchema
// property.
type HeaderBinding struct {
	Param  string
	Header string
}

// Tool is one tool definition as the server listed it, plus what the host
// derived from it. Build it with ParseTool and share it by pointer: it caches
// its validation result and compiled value schema, so it must not be copied
// or have its exported fields changed after ParseTool returns.
type Tool struct {
	Name        string
	Title       string
	Description string

	// InputSchema is exactly the bytes the server sent, or
	// {"type":"object"} when the key was absent (InputSchemaDefaulted).
	InputSchema          json.RawMessage
	InputSchemaDefaulted bool

	// SecureInputSchema is nil when the key is absent. A present
	// "secureInputSchema": null is kept as the bytes `null` and is malformed.
	SecureInputSchema json.RawMessage
	HasSecureSchema   bool

	// Annotations is the raw annotations object (nil when absent), including
	// fields mcp-go does not model (SEP-2793 risk metadata).
	Annotations json.RawMessage
	// Meta is the raw _meta object (nil when absent), where some servers
	// put the action-metadata vocabulary.
	Meta json.RawMessage

	// Raw is the whole definition exactly as received.
	Raw json.RawMessage

	// SecureParams are the names declared in secureInputSchema.properties,
	// sorted. Only these names are ever sent in secureArguments.
	SecureParams []string
	// SecureRequired are the secure names that every call must carry, sorted:
	// secureInputSchema.required plus required lists reached unconditionally
	// through allOf and $ref.
	SecureRequired []string
	// SecureHeaders are the x-mcp-header bindings of secure parameters,
	// sorted by Param.
	SecureHeaders []HeaderBinding

	// Warnings are problems that do not exclude the tool but an operator
	// should see (e.g. x-mcp-header on what looks like a secret).
	Warnings []string

	// defHash is DefHash's value, computed on first use: only calls and
	// approvals need it, a catalog of thousands of tools does not.
	hashOnce sync.Once
	defHash  string

	// inputDoc and secureDoc are the schemas decoded once by ParseTool
	// (json.Number for numbers) for the analysis, which drops them; a Tool
	// built otherwise decodes them in analyze.
	inputDoc, secureDoc any
	docsDecoded         bool
	// secureHalf, when ParseTool found secureInputSchema's text in
	// secureMemo, is its remembered analysis (secureDoc is then not
	// decoded); analyze drops it.
	secureHalf *secureHalf
	// rawValid: Raw (hence every part of it) is known to be valid JSON.
	rawValid validity

	// inputRoot are inputSchema's root members type, properties and
	// required as the single pass read them, when it did (inputRootKnown).
	inputRoot      [3]json.RawMessage
	inputRootKnown bool

	analyzeOnce sync.Once
	exclusion   *ExclusionError
	// inputHeaderTool is set when inputSchema carries valid x-mcp-header
	// annotations (see InputHeaderTool).
	inputHeaderTool *mcp.Tool
	// inputCost is the expansion of inputSchema (see ValidationCost).
	inputCost int64

	schemas     *SchemaCache // set before first use, by ListedTool.Parse
	valueOnce   sync.Once
	valueSchema *ValueSchema
	valueErr    error

	// guardTargets are SecureParams prepared for the call-time guard
	// (see Tool.CheckArguments), on first use.
	guardOnce    sync.Once
	guardTargets []guard.Target
}

// ParseTool decodes one raw tool definition from a tools/list result. It
// fails only when raw is not a JSON object or has no string "name"; every
// other defect is recorded and reported by Validate, so that one bad tool
// never hides the server's other tools.
//
// The Tool keeps raw and shares its memory (its strings and decoded
// schemas point into it): raw must never change afterwards.
func ParseTool(raw json.RawMessage) (*Tool, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedTool)
	}
	if !jsonlex.Valid(trimmed) {
		var fields map[string]json.RawMessage
		err := json.Unmarshal(trimmed, &fields)
		return nil, fmt.Errorf("%w: %w", ErrMalformedTool, err)
	}
	return parseValidTool(slices.Clone(raw))
}

// parseValidTool is ParseTool for a definition json.Valid accepted; raw
// becomes Tool.Raw (not copied) and must not change afterwards.
func parseValidTool(raw json.RawMessage) (*Tool, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedTool)
	}
	var facts *onepass.Facts
	if singlePass {
		// The facts are read before parseValidTool returns.
		if facts = onepass.Scan(trimmed, passLimits); facts != nil {
			defer facts.Release()
		}
	}
	var fields toolFields
	if facts != nil {
		fields = facts.Fields
	} else {
		fields = topLevelFields(trimmed)
	}
	var name string
	rawName := fields.get("name")
	if len(rawName) == 0 || rawName[0] != '"' {
		return nil, fmt.Errorf("%w: missing or non-string name", ErrMalformedTool)
	}
	name = jsonlex.Unquote(rawName) // a copy: names travel far (logs, grants, audit) and must not keep the page alive

	t := &Tool{
		Name:     name,
		Raw:      raw,
		rawValid: knownValid,
	}
	t.Title = optionalString(t, fields, "title")
	t.Description = optionalString(t, fields, "description")

	if schema := fields.get("inputSchema"); schema != nil {
		t.InputSchema = schema
	} else {
		t.InputSchema = slices.Clone(defaultInputSchema)
		t.InputSchemaDefaulted = true
		t.Warnings = append(t.Warnings, `the tool has no inputSchema; the host assumes {"type":"object"}`)
	}
	if schema := fields.get("secureInputSchema"); schema != nil {
		t.SecureInputSchema = schema
		t.HasSecureSchema = true
	}
	if ann := fields.get("annotations"); ann != nil {
		t.Annotations = ann
	}
	if meta := fields.get("_meta"); meta != nil {
		t.Meta = meta
	}

	if t.HasSecureSchema {
		t.secureHalf = secureMemo.get(t.SecureInputSchema)
	}
	if facts != nil && facts.HasInput && !t.InputSchemaDefaulted {
		t.inputRoot = [3]json.RawMessage{facts.Type, facts.Properties, facts.Required}
		t.inputRootKnown = true
	}
	if facts != nil && cleanByPass(t, facts) {
		t.analyzeOnce.Do(func() {})
		return t, nil
	}
	var err error
	if t.InputSchemaDefaulted {
		t.inputDoc = map[string]any{"type": "object"}
	} else if t.inputDoc, err = schemajson.DecodeValid(t.InputSchema); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedTool, err)
	}
	if t.HasSecureSchema {
		// A secure schema analysed before (another tool of the server)
		// is not decoded again (secureHalf).
		if t.secureHalf == nil {
			if t.secureDoc, err = schemajson.DecodeValid(t.SecureInputSchema); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrMalformedTool, err)
			}
		}
	}
	t.docsDecoded = true

	t.analyzeOnce.Do(func() { t.exclusion = analyze(t) })
	return t, nil
}

// DefHash is the SHA-256 (hex) of the canonical form of Raw: object keys
// sorted, insignificant whitespace removed. Approval grants and the audit
// record key on it. Computed once, on first use; safe for concurrent use.
func (t *Tool) DefHash() string {
	t.hashOnce.Do(func() {
		var hash string
		var err error
		if t.rawValid == knownValid || jsonlex.Valid(t.Raw) {
			hash, err = schemajson.CanonicalHashValid(bytes.TrimSpace(t.Raw))
		}
		if hash == "" || err != nil {
			// A malformed definition (or one the canonical form cannot
			// be built for) still needs a stable identity.
			sum := sha256.Sum256(t.Raw)
			hash = hex.EncodeToString(sum[:])
		}
		t.defHash = hash
	})
	return t.defHash
}

// Member is one member of a JSON object: its name, decoded, and its value,
// raw. It is jsonlex.Member, kept here for callers of ObjectMembers.
type Member = jsonlex.Member

// ObjectMembers splits a JSON object already known to be valid into its
// members, in order (a repeated key appears again, later), without reading
// inside the values. It is jsonlex.ObjectMembers, kept for callers outside
// this package.
func ObjectMembers(obj json.RawMessage) []Member {
	return jsonlex.ObjectMembers(obj)
}

// toolFields are the top-level members of a definition, raw, in order.
type toolFields []Member

// get returns the value of the last member named key (as a decoded map
// would), or nil.
func (f toolFields) get(key string) json.RawMessage {
	for i := len(f) - 1; i >= 0; i-- {
		if f[i].Key == key {
			return f[i].Value
		}
	}
	return nil
}

// topLevelFields splits a valid JSON object into its members, skipping the
// values' insides.
func topLevelFields(obj []byte) toolFields {
	return jsonlex.ObjectMembers(obj)
}

// optionalString reads a string field; a present non-string value is kept
// out of the field and noted, since it does not make the tool unusable.
// The text shares the definition's bytes when it needs no unescaping (a
// title or description lives as long as the Tool, which keeps them).
func optionalString(t *Tool, fields toolFields, key string) string {
	raw := fields.get(key)
	if raw == nil || string(raw) == "null" {
		return ""
	}
	if raw[0] != '"' {
		t.Warnings = append(t.Warnings, fmt.Sprintf("the tool's %q is not a string and was ignored", key))
		return ""
	}
	return schemajson.ViewString(raw)
}

// InputRoot returns the raw values of inputSchema's root members "type",
// "properties" and "required" (nil when absent), which is all the model's
// parameters depend on (llmview.ParametersOfRoot), when the definition's
// single pass read them; ok is false otherwise (read them from
// InputSchema: llmview.ParametersOfValid).
func (t *Tool) InputRoot() (typ, properties, required json.RawMessage, ok bool) {
	return t.inputRoot[0], t.inputRoot[1], t.inputRoot[2], t.inputRootKnown
}

// headerName is the full HTTP header name mcp-go uses for an x-mcp-header
// annotation value.
func headerName(annotation string) string {
	return mcp.ParamHeaderBinding{Header: annotation}.HeaderName()
}

// ValidationCost is the most subschema applications that validating one
// JSON value of the arguments against inputSchema may take (at most
// MaxSchemaExpansion; see there). A caller about to validate arguments of
// n JSON values refuses them when n*ValidationCost exceeds
// MaxValidationWork. It is 0 for an excluded tool.
func (t *Tool) ValidationCost() int64 {
	t.analyzeOnce.Do(func() { t.exclusion = analyze(t) })
	if t.exclusion != nil {
		return 0
	}
	return t.inputCost
}

// InputHeaderTool returns the tool as mcp-go models it for mirroring
// x-mcp-header annotated arguments into Mcp-Param-* headers
// (mcp.GenerateParamHeaders), or nil when inputSchema has no such
// annotation. It is built once, when the definition is analysed, and only
// for annotations mcp.ValidateParamHeaderAnnotations accepts (a tool with
// invalid ones is excluded). Callers must not modify it.
func (t *Tool) InputHeaderTool() *mcp.Tool {
	t.analyzeOnce.Do(func() { t.exclusion = analyze(t) })
	if t.exclusion != nil {
		return nil
	}
	return t.inputHeaderTool
}
