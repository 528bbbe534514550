// Package host owns agenthost's runtime: connections to MCP servers (stdio,
// streamable HTTP, SSE; both protocol eras), the tool catalog built from the
// raw tools/list pages, the SEP-3221 secure-parameters wire seam, sessions,
// the tool-call pipeline (injection guard, approvals, bindings, call, audit;
// stages composed once per host, pipeline.go)
// and the agent loop. It is the public library API that the CLI and chat
// backends embed.
package host
