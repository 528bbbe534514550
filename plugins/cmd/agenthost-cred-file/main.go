// Command agenthost-cred-file is a credential plugin that serves values
// from a JSON or YAML file. Plugin config: {"path": "FILE"}.
//
// The file maps each ref to either a string or an object:
//
//	orders/token: s3cr3t
//	billing/key:
//	  value: default-value            # optional when tenants cover everyone
//	  expiration: 2030-01-01T00:00:00Z  # RFC 3339, optional
//	  tenants:                        # keyed by the session's subject
//	    acme: acme-value
//
// A tenant entry wins for sessions whose subject is that tenant. The file is
// re-read whenever it changes; if it becomes invalid, calls fail (rather
// than serve stale values) until it is fixed. Values are always secret.
package main

import "github.com/agenthost/agenthost/plugins/sdk"

func main() { sdk.Serve(newFileSource()) }
