package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
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

// Protocol constants shared with mcp-go v1.2.1.
const (
	modernVersion         = "2026-07-28"
	latestLegacyVersion   = "2025-11-25"
	metaProtocolVersion   = "io.modelcontextprotocol/protocolVersion"
	metaClientCaps        = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo        = "io.modelcontextprotocol/clientInfo"
	metaServerInfo        = "io.modelcontextprotocol/serverInfo"
	metaSubscriptionID    = "io.modelcontextprotocol/subscriptionId"
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerSessionID       = "Mcp-Session-Id"
	headerParamPrefix     = "Mcp-Param-"
)

// legacyVersions are the handshake versions initialize accepts, newest first.
var legacyVersions = []string{latestLegacyVersion, "2025-06-18", "2025-03-26", "2024-11-05"}

// isModernVersion mirrors mcp.IsModernProtocol: dated versions sort as strings.
func isModernVersion(v string) bool { return v >= modernVersion }

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message) }

func newError(code int, format string, args ...any) *RPCError {
	return &RPCError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// withData attaches data to the error; data must marshal (it is built here).
func (e *RPCError) withData(data any) *RPCError {
	raw, err := json.Marshal(data)
	if err == nil {
		e.Data = raw
	}
	return e
}

// message is any JSON-RPC message as received: request, notification or
// response. ID stays raw so it is echoed back byte for byte.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

func (m *message) hasID() bool {
	return len(m.ID) > 0 && !bytes.Equal(bytes.TrimSpace(m.ID), []byte("null"))
}

func (m *message) isRequest() bool { return m.Method != "" && m.hasID() }

// parseMessage decodes one JSON-RPC message; batches are not supported.
func parseMessage(raw []byte) (*message, *RPCError) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || !json.Valid(trimmed) {
		return nil, newError(CodeParseError, "Parse error")
	}
	if trimmed[0] != '{' {
		return nil, newError(CodeInvalidRequest, "Invalid Request: expected a single JSON-RPC object")
	}
	var m message
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, newError(CodeInvalidRequest, "Invalid Request: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return &m, newError(CodeInvalidRequest, "Invalid Request: jsonrpc must be \"2.0\"")
	}
	return &m, nil
}

// response is an outgoing JSON-RPC response.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

func newResponse(id json.RawMessage, result any, rpcErr *RPCError) response {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return response{JSONRPC: "2.0", ID: id, Result: result, Error: rpcErr}
}

// notification is an outgoing JSON-RPC notification.
type notification struct {
	JSONRPC string         `json:"jsonrpc"`
	Method  string         `json:"method"`
	Params  map[string]any `json:"params,omitempty"`
}

func newNotification(method string, params map[string]any) notification {
	return notification{JSONRPC: "2.0", Method: method, Params: params}
}

// idKey canonicalises a raw id so 7 and 7.0 or differently spaced strings
// compare equal when matching notifications/cancelled to a request.
func idKey(raw json.RawMessage) string {
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
