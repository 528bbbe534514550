// Package serve is `agenthost serve`: an HTTP API over the host library for
// chat backends written in any language, and the places where people
// approve tool calls (a small web page, webhooks).
//
// It owns the HTTP routes (described by openapi.yaml, embedded and served at
// /openapi.yaml), authentication of API callers and approvers (bearer tokens
// stored as SHA-256 hashes, or client certificates under mutual TLS), what
// each identity may do (sessions belong to their creator or its tenant; a
// session's subject is its caller unless serve.identities[].subjects allow
// another; the identity whose turn asks cannot approve it), the protection
// of state-changing routes against cross-site requests (csrf.go), the
// served sessions and their turns (events as Server-Sent Events, resumable
// with Last-Event-ID), the pending-approvals queue that served sessions ask,
// the webhooks' payload, an in-memory index of audit records by session, and
// forwarding to the replica that owns a session or an approval.
//
// Its parts with one job each live below it in internal packages, which
// never import serve: internal/eventlog (a turn's events, encoded once and
// bounded), internal/sse (writing and streaming Server-Sent Events),
// internal/sharedstore (the shared mode's PostgreSQL store of sessions and
// turn events), internal/connlimit (the listener's connection bounds),
// internal/webhook (signing and delivering the webhooks) and internal/auth
// (who a caller is: identities, their tokens and certificates).
//
// Layering: cmd/agenthost → serve → host → {approvals, bindings, ...}.
// serve uses only the public API of host, approvals and config; nothing
// below it imports it, and cmd/agenthost only parses flags and calls it.
package serve
