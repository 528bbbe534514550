// Package mcpconn owns the host's connections to MCP servers: connecting
// and reconnecting with backoff (conn.go, dial.go, refresh.go), the wire
// seam around mcp-go's transports (wire.go: raw tools/list pages,
// secureArguments and Mcp-Param-* headers on tools/call, raw JSON-RPC
// errors), the transport each server's config asks for (transport.go: the
// stdio child's command, sandbox and supervisor; the HTTP client), the
// catalog built from each listing (listing.go, catalog.go), and following
// a call's task (task.go). Call sends one tools/call attempt and owns its
// reconnect and refresh-on-unknown-tool; it says in its error whether the
// call may be sent once more (CallError.Retry), and the host sends the
// retry; nothing here resolves secure values or observes an attempt for
// the host.
//
// Its parts with one job each are packages below it, which never import
// it: wirecheck (what a server's message must be, the bounded line reader,
// the requests in flight a bad message fails), serverreq (the bounds on
// the server's requests to the host), stdiorpc (the stdio child and the
// JSON-RPC over its pipes, each line decoded once), httpguard (the HTTP
// response bounds and the 2025-11-25 era's needs), outbound (the rewriting
// of outgoing requests), taskwire (a task's wire form and the routing of
// its notifications) and errtidy (a connection error's message).
//
// A request that needs the seam (a listing read raw, a call with secure
// values, header arguments or tasks, a task request) carries an exchange
// in its context: mcp-go hands the transport the caller's context with
// every round of a request, so the seam finds it there, applies it only to
// a request of its method, and hands the raw result back through it.
//
// It is internal to the host: package host re-exports the catalog types
// (ServerSnapshot, CatalogTool, their states) and the errors callers branch
// on, so users never import this package.
package mcpconn

import (
	"errors"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// ErrServerUnavailable: the server cannot be reached (disabled, backing off
// after failures, or the connect failed).
var ErrServerUnavailable = errors.New("server unavailable")

// ErrProtocol matches every [*ProtocolError]: errors.Is(err, ErrProtocol).
var ErrProtocol = wirecheck.ErrProtocol

// ProtocolError is a server message the host could not take: not JSON-RPC,
// or larger than limits.maxResponseBytes (wirecheck).
type ProtocolError = wirecheck.ProtocolError
