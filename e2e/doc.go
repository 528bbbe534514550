// Package e2e holds tests that run the real agenthost binary against real
// processes: the secure-params MCP test server (cmd/agenthost-testserver, over
// stdio and streamable HTTP) and pinned npm peer servers such as
// @modelcontextprotocol/server-everything (installed by `make peers` into
// e2e/peers/node_modules). TestMain builds the binaries; every test writes
// its own config into a temporary directory and asserts on the CLI's
// stdout, stderr and exit code and on what the servers recorded on the wire.
package e2e
