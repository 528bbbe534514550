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

	// DefHash is the SHA-256 (hex) of the canonical form of Raw: object keys
	// sorted, insignificant whitespace removed. Approval grants key on it.
	DefHash string

	// inputDoc and secureDoc are the schemas decoded once by ParseTool
	// (json.Number for numbers); a Tool built otherwise decodes them in
	// analyze.
	inputDoc, secureDoc any
	docsDecoded         bool

	analyzeOnce sync.Once
	exclusion   *ExclusionError

	valueOnce   sync.Once
	valueSchema *ValueSchema
	valueErr    error
}

// ParseTool decodes one raw tool definition from a tools/list result. It
// fails only when raw is not a JSON object or has no string "name"; every
// other defect is recorded and reported by Validate, so that one bad tool
// never hides the server's other tools.
func ParseTool(raw json.RawMessage) (*Tool, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, fmt.Errorf("%w: not a JSON object", ErrMalformedTool)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedTool, err)
	}
	var name string
	rawName := bytes.TrimSpace(fields["name"])
	if len(rawName) == 0 || rawName[0] != '"' || json.Unmarshal(rawName, &name) != nil {
		return nil, fmt.Errorf("%w: missing or non-string name", ErrMalformedTool)
	}

	t := &Tool{
		Name: name,
		Raw:  slices.Clone(raw),
	}
	t.Title = optionalString(t, fields, "title")
	t.Description = optionalString(t, fields, "description")

	if schema, ok := fields["inputSchema"]; ok {
		t.InputSchema = schema
	} else {
		t.InputSchema = slices.Clone(defaultInputSchema)
		t.InputSchemaDefaulted = true
		t.Warnings = append(t.Warnings, `the tool has no inputSchema; the host assumes {"type":"object"}`)
	}
	if schema, ok := fields["secureInputSchema"]; ok {
		t.SecureInputSchema = schema
		t.HasSecureSchema = true
	}
	if ann, ok := fields["annotations"]; ok {
		t.Annotations = ann
	}

	doc, hash, err := canonicalHash(trimmed)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformedTool, err)
	}
	t.DefHash = hash
	if obj, ok := doc.(map[string]any); ok {
		t.inputDoc, t.secureDoc = obj["inputSchema"], obj["secureInputSchema"]
		if t.InputSchemaDefaulted {
			t.inputDoc = map[string]any{"type": "object"}
		}
		t.docsDecoded = true
	}

	t.analyzeOnce.Do(func() { t.exclusion = analyze(t) })
	return t, nil
}

// optionalString reads a string field; a present non-string value is kept
// out of the field and noted, since it does not make the tool unusable.
func optionalString(t *Tool, fields map[string]json.RawMessage, key string) string {
	raw, ok := fields[key]
	if !ok || string(raw) == "null" {
		return ""
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Warnings = append(t.Warnings, fmt.Sprintf("the tool's %q is not a string and was ignored", key))
		return ""
	}
	return s
}

// canonicalHash decodes raw and hashes it with object keys sorted and
// whitespace removed. Numbers keep their literal text (json.Number), so 1
// and 1.0 differ: the hash identifies what the server sent, not its numeric
// meaning. The decoded document is returned for reuse.
func canonicalHash(raw []byte) (any, string, error) {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, "", fmt.Errorf("canonicalising definition: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, "", fmt.Errorf("canonicalising definition: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return v, hex.EncodeToString(sum[:]), nil
}

// headerName is the full HTTP header name mcp-go uses for an x-mcp-header
// annotation value.
func headerName(annotation string) string {
	return mcp.ParamHeaderBinding{Header: annotation}.HeaderName()
}
