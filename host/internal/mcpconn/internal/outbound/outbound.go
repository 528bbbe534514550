// Package outbound owns the rewriting of the requests the host sends
// through mcp-go: a tools/call's secureArguments (SecureArgs, prepared
// once per tool) and the headers that carry them, the Mcp-Param-* headers
// of x-mcp-header arguments (SEP-2243), and the task requests mcp-go does
// not know, sent in place of its tasks/get. Each function returns a copy:
// mcp-go reuses a request's params across retries. Which request gets
// which rewriting is mcpconn's seam's (wire.go).
package outbound

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// SecureArgs are the secureArguments of calls to one tool, prepared once
// (validated, encoded): read-only, so one may go with many calls.
type SecureArgs struct {
	tool       string
	quotedTool json.RawMessage   // tool, JSON-encoded
	encoded    json.RawMessage   // the values, encoded once for every round
	headers    map[string]string // header name -> encoded value
	names      []string          // the values' names, sorted
}

// NewSecureArgs prepares the secure values of calls to tool, and the
// x-mcp-header headers that carry some of them. An empty values still
// sends an empty secureArguments object.
func NewSecureArgs(tool string, values map[string]any, headers map[string]string) (*SecureArgs, error) {
	encoded, err := json.Marshal(values)
	if err != nil {
		// The encoder's message may quote a value: say nothing of it.
		return nil, errors.New("secure values cannot be encoded as JSON")
	}
	if values == nil {
		encoded = json.RawMessage("{}")
	}
	quoted, _ := json.Marshal(tool) // a string always encodes
	return &SecureArgs{tool: tool, quotedTool: quoted, encoded: encoded, headers: headers,
		names: slices.Sorted(maps.Keys(values))}, nil
}

// Names are the secure parameter names sent, sorted (never values); a copy
// the caller owns. It ends in CallResult.SecureParams, which a library
// caller may change: shared, that would change what later calls report
// and audit.
func (s *SecureArgs) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// RejectsOwnVersion reports whether a response to a request is an
// UnsupportedProtocolVersion error (-32022) whose supported versions include
// the one the request declared in its _meta.
func RejectsOwnVersion(params any, response *transport.JSONRPCResponse) bool {
	if response == nil || response.Error == nil || response.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return false
	}
	fields, ok := params.(map[string]json.RawMessage)
	if !ok {
		return false
	}
	var meta map[string]json.RawMessage
	var declared string
	if json.Unmarshal(fields["_meta"], &meta) != nil || json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &declared) != nil || declared == "" {
		return false
	}
	var data mcp.UnsupportedProtocolVersionData
	encoded, err := json.Marshal(response.Error.Data)
	if err != nil || json.Unmarshal(encoded, &data) != nil {
		return false
	}
	return slices.Contains(data.Supported, declared)
}

// WithTaskRequest returns a copy of mcp-go's tasks/get request that sends
// task's method and params instead, beside the _meta mcp-go added; on
// 2026-07-28 HTTP (headers) with Mcp-Method and Mcp-Name (the task id)
// set as the extension requires.
func WithTaskRequest(request transport.JSONRPCRequest, task *TaskRequest, headers bool) (transport.JSONRPCRequest, error) {
	encoded, err := json.Marshal(request.Params)
	if err != nil {
		return request, fmt.Errorf("%s params: %w", task.Method, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &fields); err != nil || fields == nil {
		fields = map[string]json.RawMessage{}
	}
	params := make(map[string]json.RawMessage, len(task.Params)+1)
	if meta, ok := fields["_meta"]; ok {
		params["_meta"] = meta
	}
	for k, v := range task.Params {
		b, err := json.Marshal(v)
		if err != nil {
			return request, fmt.Errorf("%s params: %w", task.Method, err)
		}
		params[k] = b
	}
	request.Method = task.Method
	request.Params = params
	if headers {
		h := request.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set(mcp.HeaderMethod, task.Method)
		if id, ok := task.Params["taskId"].(string); ok {
			if v, ok := mcp.EncodeHeaderValue(id); ok {
				h.Set(mcp.HeaderName, v)
			}
		}
		request.Header = h
	}
	return request, nil
}

// AttachSecureArguments returns a copy of a tools/call request whose params
// carry the call's secureArguments. The request's params are never mutated:
// mcp-go reuses them (and their _meta) across retries. The params are
// encoded once and the secure object spliced in, so the transport sends the
// bytes as they are.
func AttachSecureArguments(request transport.JSONRPCRequest, call *SecureArgs) (transport.JSONRPCRequest, bool, error) {
	if !call.isFor(request.Params) {
		// Bound to another tool: never send these values elsewhere.
		return request, false, nil
	}
	if fields, ok := request.Params.(map[string]json.RawMessage); ok {
		// 2026-07-28: mcp-go has already turned the params into a field
		// map (to add _meta); a copy with one more field is enough.
		params := make(map[string]json.RawMessage, len(fields)+1)
		for k, v := range fields {
			params[k] = v
		}
		params["secureArguments"] = call.encoded
		request.Params = params
		return request, true, nil
	}
	encoded, err := json.Marshal(request.Params)
	if err != nil {
		return request, false, fmt.Errorf("encode tools/call params: %w", err)
	}
	encoded = bytes.TrimSpace(encoded)
	if len(encoded) < 2 || encoded[0] != '{' || encoded[len(encoded)-1] != '}' {
		return request, false, errors.New("tools/call params are not an object")
	}
	params := make([]byte, 0, len(encoded)+len(call.encoded)+22)
	params = append(params, encoded[:len(encoded)-1]...)
	if len(bytes.TrimSpace(encoded[1:len(encoded)-1])) > 0 {
		params = append(params, ',')
	}
	params = append(params, `"secureArguments":`...)
	params = append(params, call.encoded...)
	params = append(params, '}')
	request.Params = json.RawMessage(params)
	return request, true, nil
}

// isFor reports whether tools/call params name the call's tool. mcp-go
// encodes the name of a 2026-07-28 field map with encoding/json, as the
// host encoded quotedTool: equal bytes settle it without decoding.
func (s *SecureArgs) isFor(params any) bool {
	if fields, ok := params.(map[string]json.RawMessage); ok && bytes.Equal(fields["name"], s.quotedTool) {
		return true
	}
	return CallName(params) == s.tool
}

// WithSecureHeaders adds the x-mcp-header headers of secure values (on a
// copy of the request's headers).
func WithSecureHeaders(request transport.JSONRPCRequest, call *SecureArgs) transport.JSONRPCRequest {
	if len(call.headers) == 0 {
		return request
	}
	header := http.Header{}
	if request.Header != nil {
		header = request.Header.Clone()
	}
	for name, value := range call.headers {
		header.Set(name, value)
	}
	request.Header = header
	return request
}

// CallName is the tool name of tools/call params in the shapes mcp-go
// sends: the typed params (legacy) or a field map (2026-07-28, after it
// adds _meta).
func CallName(params any) string {
	switch p := params.(type) {
	case mcp.CallToolParams:
		return p.Name
	case *mcp.CallToolParams:
		return p.Name
	case map[string]json.RawMessage:
		var name string
		_ = json.Unmarshal(p["name"], &name)
		return name
	default:
		encoded, err := json.Marshal(params)
		if err != nil {
			return ""
		}
		var v struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(encoded, &v)
		return v.Name
	}
}

// WithParamHeaders returns the request with the Mcp-Param-* headers of its
// tool's x-mcp-header arguments (on a copy of its headers).
func WithParamHeaders(request transport.JSONRPCRequest, tool *mcp.Tool) transport.JSONRPCRequest {
	var args json.RawMessage
	switch p := request.Params.(type) {
	case map[string]json.RawMessage:
		args = p["arguments"]
	default:
		encoded, err := json.Marshal(p)
		if err != nil {
			return request
		}
		var v struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(encoded, &v) != nil {
			return request
		}
		args = v.Arguments
	}
	if len(args) == 0 {
		return request
	}
	params := make([]byte, 0, len(args)+14)
	params = append(append(append(params, `{"arguments":`...), args...), '}')
	headers := mcp.GenerateParamHeaders(tool, params)
	if len(headers) == 0 {
		return request
	}
	header := http.Header{}
	if request.Header != nil {
		header = request.Header.Clone()
	}
	for name, value := range headers {
		header.Set(name, value)
	}
	request.Header = header
	return request
}

// TaskRequest is the method and params the seam sends for a task
// request mcp-go sends as tasks/get.
type TaskRequest struct {
	Method string
	Params map[string]any
}
