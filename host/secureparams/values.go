package secureparams

import (
	"encoding/json"
	"errors"
	"math"

	"github.com/agenthost/agenthost/host/secureparams/internal/valueschema"
	"github.com/agenthost/agenthost/internal/safeschema"
	"github.com/mark3labs/mcp-go/mcp"
)

// ValueSchema is a compiled secureInputSchema: it checks host-bound values
// before they are sent (internal/valueschema owns it). It is immutable and
// safe for concurrent use.
type ValueSchema = valueschema.Schema

// ValueError is one host-bound value that failed its schema; it never
// holds the value.
type ValueError = valueschema.ValueError

// SchemaCache shares compiled secure schemas across the tools of a
// listing (see valueschema.Cache).
type SchemaCache = valueschema.Cache

// NewSchemaCache returns an empty cache.
func NewSchemaCache() *SchemaCache { return valueschema.NewCache() }

// CompileSecureSchema compiles a secureInputSchema with JSON Schema draft
// 2020-12, which SEP-3221 requires (see valueschema.Compile): another
// draft is refused, format and content assertions stay off, and no
// reference outside the document is ever fetched.
func CompileSecureSchema(schema json.RawMessage) (*ValueSchema, error) {
	return valueschema.Compile(schema)
}

// ErrNoSecureSchema is returned by Tool.ValueSchema for a tool without a
// secureInputSchema.
var ErrNoSecureSchema = errors.New("tool has no secureInputSchema")

// ErrRemoteSchema is what the compiler's loader answers for every URL it is
// asked to fetch: schemas are never loaded from anywhere.
var ErrRemoteSchema = safeschema.ErrRemoteSchema

// ValueSchema returns the tool's compiled secureInputSchema, compiling it on
// first use and caching the result (or the error) for the life of the Tool.
// Validate compiles it unless valueschema.Sure is certain the compile
// succeeds; then the first call that needs the compiled schema compiles it.
func (t *Tool) ValueSchema() (*ValueSchema, error) {
	if t == nil || !t.HasSecureSchema {
		return nil, ErrNoSecureSchema
	}
	t.valueOnce.Do(func() {
		if t.schemas != nil {
			t.valueSchema, t.valueErr = t.schemas.Get(t.SecureInputSchema)
		} else {
			t.valueSchema, t.valueErr = CompileSecureSchema(t.SecureInputSchema)
		}
	})
	return t.valueSchema, t.valueErr
}

// checkValueSchema returns ValueSchema's error, without compiling the
// schema when valueschema.Sure answers that it compiles.
func (t *Tool) checkValueSchema() error {
	if t.schemas != nil {
		return t.schemas.Check(t.SecureInputSchema)
	}
	if valueschema.Sure(t.SecureInputSchema) {
		return nil
	}
	_, err := t.ValueSchema()
	return err
}

// Select keeps only the values whose names the tool declares as secure
// parameters: nothing else ever goes out in secureArguments. It returns a
// new map (nil when nothing is left).
func Select(values map[string]any, t *Tool) map[string]any {
	if t == nil {
		return nil
	}
	var out map[string]any
	for _, name := range t.SecureParams {
		if v, ok := values[name]; ok {
			if out == nil {
				out = make(map[string]any, len(t.SecureParams))
			}
			out[name] = v
		}
	}
	return out
}

// ParamHeaders returns the Mcp-Param-* headers (Streamable HTTP) carrying the
// secure values of parameters annotated with x-mcp-header, encoded as mcp-go
// encodes parameter headers (Base64 sentinel for unsafe text). Absent or
// null values get no header. A value that is not a string, boolean or
// integer is an error naming the parameter only.
func ParamHeaders(t *Tool, secureArgs map[string]any) (map[string]string, error) {
	if t == nil || len(t.SecureHeaders) == 0 {
		return nil, nil
	}
	var out map[string]string
	for _, b := range t.SecureHeaders {
		value, ok := secureArgs[b.Param]
		if !ok || value == nil {
			continue
		}
		primitive, ok := headerPrimitive(value)
		if !ok {
			return nil, &ValueError{Param: b.Param, Reason: "value for header " + b.Header + " is not a string, boolean or integer"}
		}
		encoded, ok := mcp.EncodeHeaderValue(primitive)
		if !ok {
			return nil, &ValueError{Param: b.Param, Reason: "value for header " + b.Header + " cannot be encoded"}
		}
		if out == nil {
			out = make(map[string]string, len(t.SecureHeaders))
		}
		out[b.Header] = encoded
	}
	return out, nil
}

// maxSafeInteger is the largest integer a JSON number carries exactly in
// every implementation (IEEE-754 double); mcp-go applies the same bound.
const maxSafeInteger = 1<<53 - 1

// headerPrimitive converts a value to what mcp.EncodeHeaderValue accepts:
// string, bool or int64.
func headerPrimitive(value any) (any, bool) {
	switch v := value.(type) {
	case string, bool:
		return v, true
	case int:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, v >= -maxSafeInteger && v <= maxSafeInteger
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return nil, false
		}
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		if err != nil || n < -maxSafeInteger || n > maxSafeInteger {
			return nil, false
		}
		return n, true
	}
	return nil, false
}
