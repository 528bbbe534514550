package mcptest

import "github.com/agenthost/agenthost/host/mcptest/internal/wire"

// JSON-RPC and MCP error codes the server emits.
const (
	CodeParseError         = wire.CodeParseError
	CodeInvalidRequest     = wire.CodeInvalidRequest
	CodeMethodNotFound     = wire.CodeMethodNotFound
	CodeInvalidParams      = wire.CodeInvalidParams
	CodeInternalError      = wire.CodeInternalError
	CodeHeaderMismatch     = wire.CodeHeaderMismatch
	CodeMissingCapability  = wire.CodeMissingCapability
	CodeUnsupportedVersion = wire.CodeUnsupportedVersion
)

// RPCError is a JSON-RPC error object.
type RPCError = wire.RPCError
