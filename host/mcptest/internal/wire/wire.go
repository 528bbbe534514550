// Package wire owns mcptest's JSON-RPC framing: the message as received,
// the response and notification as sent, the error object and its codes,
// request ids compared as values, and the protocol's version, _meta and
// header names.
package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// JSON-RPC and MCP error codes the server emits.
const (
	CodeParseError         = -32700
	CodeInvalidRequest     = -32600
	CodeMethodNotFound     = -32601
	CodeInvalidParams      = -32602
	CodeInternalError      = -32603
	CodeHeaderMismatch     = -32020
	CodeMissingCapability  = -32021
	CodeUnsupportedVersion = -32022
)

// Protocol constants shared with mcp-go v1.2.1: the versions, the _meta
// keys and the HTTP headers.
const (
	ModernVersion         = "2026-07-28"
	LatestLegacyVersion   = "2025-11-25"
	MetaProtocolVersion   = "io.modelcontextprotocol/protocolVersion"
	MetaClientCaps        = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo        = "io.modelcontextprotocol/clientInfo"
	MetaServerInfo        = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID    = "io.modelcontextprotocol/subscriptionId"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	HeaderMethod          = "Mcp-Method"
	HeaderName            = "Mcp-Name"
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderParamPrefix     = "Mcp-Param-"
)

// LegacyVersions are the handshake versions initialize accepts, newest first.
var LegacyVersions = []string{LatestLegacyVersion, "2025-06-18", "2025-03-26", "2024-11-05"}

// IsModern mirrors mcp.IsModernProtocol: dated versions sort as strings.
func IsModern(v string) bool { return v >= ModernVersion }

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error renders the code and the message.
func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

// Errorf is the error of code with a formatted message.
func Errorf(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// WithData attaches data to e and returns it; data must marshal (it is
// built by the server).
func WithData(e *RPCError, data any) *RPCError {
	raw, err := json.Marshal(data)
	if err == nil {
		e.Data = raw
	}
	return e
}

// Message is any JSON-RPC message as received: request, notification or
// response. ID stays raw so it is echoed back byte for byte.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// HasID reports a message with an id (not null): a request or a response.
func (m *Message) HasID() bool {
	return len(m.ID) > 0 && !bytes.Equal(bytes.TrimSpace(m.ID), []byte("null"))
}

// IsRequest reports a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.HasID() }

// Parse decodes one JSON-RPC message; batches are not supported.
func Parse(raw []byte) (*Message, *RPCError) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil, Errorf(CodeParseError, "Parse error")
	}
	if trimmed[0] != '{' {
		return nil, Errorf(CodeInvalidRequest, "Invalid Request: expected a single JSON-RPC object")
	}
	var m Message
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, Errorf(CodeInvalidRequest, "Invalid Request: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return &m, Errorf(CodeInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"")
	}
	return &m, nil
}

// Response is an outgoing JSON-RPC response.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// NewResponse is the response of id (null when the request had none).
func NewResponse(id json.RawMessage, result any, rpcErr *RPCError) Response {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return Response{JSONRPC: "2.0", ID: id, Result: result, Error: rpcErr}
}

// Notification is an outgoing JSON-RPC notification.
type Notification struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params,omitempty"`
}

// NewNotification is a notification of method.
func NewNotification(method string, params map[string]any) Notification {
	return Notification{JSONRPC: "2.0", Method: method, Params: params}
}

// IDKey canonicalises a raw id so 7 and 7.0 or differently spaced strings
// compare equal when matching notifications/cancelled to a request.
func IDKey(raw json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return string(raw)
	}
	if n, ok := v.(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return fmt.Sprintf("n:%v", f)
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// MaxBodyBytes bounds one HTTP body the server reads, and one event of an
// event stream a test reads.
const MaxBodyBytes = 16 << 20

// SecureParamsExtension is the SEP-3221 extension id.
const SecureParamsExtension = "io.modelcontextprotocol/secure-params"

// DecodeObject decodes an optional JSON object parameter.
func DecodeObject(raw json.RawMessage, what string) (map[string]json.RawMessage, *RPCError) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return map[string]json.RawMessage{}, nil
	}
	if trimmed[0] != '{' {
		return nil, Errorf(CodeInvalidParams, "%s must be an object", what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, Errorf(CodeInvalidParams, "%s: %v", what, err)
	}
	return m, nil
}

// Canonical re-encodes a value with sorted keys so equal payloads hash
// equally whatever their key order or spacing.
func Canonical(raw json.RawMessage) []byte {
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

// SortedKeys are m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// HeaderMatches compares a header with a JSON value using SEP-2243 encoding:
// strings as-is or =?base64?...?=, integers in decimal, booleans as words.
func HeaderMatches(header string, value json.RawMessage) bool {
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

// Waiters are the requests awaiting their answers, by IDKey; each entry
// lives while its request waits.
type Waiters[T any] struct {
	mu sync.Mutex
	m  map[string]chan T
}

// Add registers a request; done forgets it.
func (w *Waiters[T]) Add(key string) (answer <-chan T, done func()) {
	ch := make(chan T, 1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan T{}
	}
	w.m[key] = ch
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m, key)
	}
}

// Deliver hands an answer to the request waiting for it; an answer nobody
// waits for, or a second one to one id, is dropped: the first one counts.
func (w *Waiters[T]) Deliver(key string, v T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.m[key] <- v: // a nil channel (nobody waits) is never ready
	default:
	}
}
