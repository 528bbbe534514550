// Package mcpconn owns the host's connections to MCP servers: connecting
// and reconnecting with backoff, the wire seam around mcp-go's transports
// (wire.go: raw tools/list pages, secureArguments and Mcp-Param-* headers
// on tools/call, raw JSON-RPC errors), bounded and checked reads, the
// stdio child process and the JSON-RPC transport over its pipes
// (stdio.go, stdiorpc.go: each line decoded once), and the catalog built
// from each listing. Call sends one tools/call attempt and owns its
// reconnect and refresh-on-unknown-tool; it says in its error whether the
// call may be sent once more (CallError.Retry), and the host sends the
// retry; nothing here resolves secure values or observes an attempt for
// the host.
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

import "errors"

// ErrServerUnavailable: the server cannot be reached (disabled, backing off
// after failures, or the connect failed).
var ErrServerUnavailable = errors.New("server unavailable")
