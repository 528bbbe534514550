//go:build unix

// Command agenthost-cred-exec is a credential plugin that runs a command to
// get each value, in the style of AWS credential_process. Plugin config:
//
//	{"command": ["/usr/local/bin/get-token", "--profile", "prod"], "timeout": "5s"}
//
// For each Resolve it runs the command with the ref appended as the last
// argument and an environment of only PATH plus the call's scope:
// AGENTHOST_SESSION_ID, AGENTHOST_SUBJECT, AGENTHOST_SERVER, AGENTHOST_TOOL
// and AGENTHOST_PARAM. The command prints one JSON object to stdout:
//
//	{"Version": 1, "Value": "...", "Expiration": "2030-01-01T00:00:00Z"}
//
// Expiration (RFC 3339) is optional. A non-zero exit, bad JSON or a timeout
// fails the call. The command's stderr is never logged or returned (it may
// echo secrets); only its size is reported. The command runs in its own
// process group, which is killed on timeout, on cancellation and after the
// command exits, so stray background children do not survive it.
package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() { sdk.Serve(newExecSource()) }
