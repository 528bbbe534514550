package host

import (
	"encoding/json"
	"fmt"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
	"github.com/agenthost/agenthost/internal/benchhooks"
)

// The catalog types are built by the connections (host/internal/mcpconn)
// and re-exported here: they are part of the host's API.

// ServerStatus is the state of one server connection.
type ServerStatus = mcpconn.ServerStatus

// Server states.
const (
	StatusConnecting = mcpconn.StatusConnecting
	StatusConnected  = mcpconn.StatusConnected
	StatusError      = mcpconn.StatusError
	StatusDisabled   = mcpconn.StatusDisabled
)

// ToolStatus says whether a tool is offered to the model.
type ToolStatus = mcpconn.ToolStatus

// Tool states (`tools --json`, docs/cli.md).
const (
	ToolActive   = mcpconn.ToolActive   // in the model view
	ToolHidden   = mcpconn.ToolHidden   // valid but not offered
	ToolExcluded = mcpconn.ToolExcluded // invalid definition
)

// CatalogTool is one tool as the host knows it: the raw definition exactly
// as the server listed it, and the static verdicts (definition validity,
// allow/deny filters); per-session verdicts (unbindable secure parameters,
// trust level) are added by the model view.
type CatalogTool = mcpconn.CatalogTool

// ServerSnapshot is an immutable view of one server's catalog. A new
// snapshot replaces the old one on every (re)listing; Generation grows each
// time.
type ServerSnapshot = mcpconn.ServerSnapshot

func init() {
	benchhooks.LoadListing = func(h any, server string, secureParams bool, pages ...json.RawMessage) error {
		return h.(*Host).loadListing(server, secureParams, pages...)
	}
}

// ProtocolError is a server message the host could not take: not JSON-RPC,
// or larger than limits.maxResponseBytes. Its message says what was wrong
// and never quotes the message.
type ProtocolError = mcpconn.ProtocolError

// ErrProtocol matches every [*ProtocolError]: errors.Is(err, ErrProtocol).
var ErrProtocol = mcpconn.ErrProtocol

// loadListing builds a server's catalog from tools/list results received
// elsewhere, each page being the raw "result" object of one tools/list
// response, and installs it as the server's snapshot: the same splitting,
// limits, parsing and validation as a listing over the connection, with the
// modern protocol and, when secureParams is set, the server's first
// configured secure-params extension taken as negotiated. The server is not
// contacted; a later call connects (and re-lists) as usual.
//
// It exists so that catalog building can be measured and inspected without
// a transport: the benchmarks reach it through internal/benchhooks.
func (h *Host) loadListing(server string, secureParams bool, pages ...json.RawMessage) error {
	c, ok := h.conns[server]
	if !ok {
		return fmt.Errorf("%w: %s", ErrUnknownServer, server)
	}
	return c.LoadListing(secureParams, pages...)
}
