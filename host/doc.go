// Package host owns agenthost's runtime: connections to MCP servers (stdio,
// streamable HTTP, SSE; both protocol eras), the tool catalog built from the
// raw tools/list pages, the SEP-3221 secure-parameters wire seam, sessions,
// the tool-call pipeline (injection guard, approvals, bindings, call, audit;
// stages composed once per host, pipeline.go)
// and the agent loop. It is the public library API that the CLI and chat
// backends embed.
//
// A host is given its parts, and builds none: the model (a model.LLM), the
// approval and audit stores, the credential sources, the Authorizer of
// servers reached by url, the Observer. Package host/compose builds them
// from a config (compose.New); host.New takes them from a program that
// wires its host by hand (docs/library.md).
package host
