// Package mcptest is a scriptable MCP server for the project's unit and
// e2e tests. It implements the server side of SEP-3221 (secure parameters) in
// both protocol eras - 2025-11-25 (initialize handshake, Mcp-Session-Id over
// HTTP) and 2026-07-28 (server/discover, per-request _meta, Mcp-* headers,
// resultType) - over newline-delimited stdio and streamable HTTP. The binary
// wrapper is cmd/agenthost-testserver; its flags mirror Options (ParseFlags).
//
// The JSON-RPC layer is written by hand because mcp-go's server cannot emit
// secureInputSchema, cannot read secureArguments, and turns every handler
// error into -32603.
//
// # Tools file and x-test
//
// A tool may carry an "x-test" object, stripped before serving (unknown
// fields are a load error): inputRequired N, isError, text, echoSecure,
// sleep "2s", die, hang, listChanged "FILE" (relative to the tools file),
// errorCode/errorMessage/errorData, structured, content, meta (the result's
// _meta), progress (a list of
// {progress, total, message} sent as notifications/progress over the sleep,
// on stdio, to a call with a progressToken). Entries that are not
// objects, lack a name or repeat one are served verbatim.
//
// # Recording
//
// Every received message (and, in memory, every sent one) is kept in the
// Recording; with Options.RecordFile each is also appended as one line
// {"ts","dir","transport","httpMethod"?,"headers"? (HTTP),"message"}.
// Secure values are kept on purpose; nothing else the server writes (errors,
// default results, stderr noise, requestState) contains them.
//
// # Decisions where the specs are silent
//
//   - input_required (MRTR) results are returned in both eras; mcp-go's client
//     drives the retry loop in both. The only server-initiated request is
//     the elicitation/create of a 2025-11-25 task's tasks/result
//     (TaskBehaviour). requestState is MAC-sealed and binds the
//     round and a MAC of secureArguments; a retry that changes them is -32602.
//   - notifications/tools/list_changed goes to: legacy stdio connections that
//     completed initialize (written before the triggering call's response);
//     legacy HTTP GET streams; the SSE response of the legacy HTTP tools/call
//     that caused the change when its session has no GET stream; and modern
//     subscriptions/listen streams (stdio and HTTP) that opted in, tagged with
//     the subscription id. Modern clients that did not subscribe get nothing.
//   - A tool with a secureInputSchema called without the negotiated extension
//     answers -32021 even when it is hidden from that client's tools/list.
//     Secure validation precedes every x-test behaviour.
//   - HTTP status of JSON-RPC errors follows Options.ErrorStatus. Under the
//     default (SEP table) a legacy-era unknown tool is HTTP 404, which makes
//     mcp-go's client drop its legacy session; ErrorStatusModern avoids that.
//   - Modern HTTP requests must carry Mcp-Protocol-Version equal to _meta's,
//     Mcp-Method, Mcp-Name for tools/call, and Mcp-Param-* for x-mcp-header
//     properties of inputSchema and secureInputSchema (-32020 otherwise).
//   - Legacy HTTP requests other than initialize need a known Mcp-Session-Id
//     (400 when missing, 404 when unknown); DELETE ends the session.
//   - DieAfter N answers N requests and dies when request N+1 arrives.
//   - On stdio, requests run in arrival order, except subscriptions/listen and
//     calls of sleeping or hanging tools, which run beside the read loop so
//     notifications/cancelled is still read.
package mcptest
