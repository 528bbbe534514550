// Command confclient runs agenthost as the client of one scenario of the
// MCP conformance suite (e2e/conformance_test.go). The suite runs
//
//	confclient AGENTHOST ARGS... URL
//	confclient AGENTHOST --each-tool [--args TOOL=JSON | --schema-to TOOL=LISTED]... URL
//
// with the scenario's client credentials, where it hands the client some,
// in MCP_CONFORMANCE_CONTEXT (a JSON object). confclient passes them to
// agenthost as the AGENTHOST_OAUTH_* variables of an ad-hoc server
// (docs/config.md), runs AGENTHOST ARGS... URL, and exits with its exit
// code. With --each-tool it lists the server's tools and calls each, as an
// operator would (operate.go). A workload assertion (valid_jwt, workload
// identity federation) is written to a private file named by
// AGENTHOST_OAUTH_ASSERTION_FILE, as a platform would project it, and
// removed afterwards. It implements no protocol behaviour: everything on
// the wire is agenthost's.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// contextVars maps the keys of MCP_CONFORMANCE_CONTEXT to agenthost's
// variables.
var contextVars = map[string]string{
	"client_id":       "AGENTHOST_OAUTH_CLIENT_ID",
	"client_secret":   "AGENTHOST_OAUTH_CLIENT_SECRET",
	"private_key_pem": "AGENTHOST_OAUTH_PRIVATE_KEY",
	// Enterprise-managed authorization (SEP-990).
	"idp_token_endpoint": "AGENTHOST_OAUTH_IDP_TOKEN_ENDPOINT",
	"idp_client_id":      "AGENTHOST_OAUTH_IDP_CLIENT_ID",
	"idp_id_token":       "AGENTHOST_OAUTH_ID_TOKEN",
}

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: confclient AGENTHOST ARGS... URL")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "confclient-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
	env, err := environment(os.Environ(), os.Getenv("MCP_CONFORMANCE_CONTEXT"), dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(2)
	}
	var code int
	if len(os.Args) >= 4 && os.Args[2] == "--each-tool" {
		last := len(os.Args) - 1
		code, err = operate(os.Args[1], os.Args[last], os.Args[3:last], env, os.Getenv("MCP_CONFORMANCE_CONTEXT"), os.Stdout, os.Stderr)
	} else {
		cmd := exec.Command(os.Args[1], os.Args[2:]...)
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		code, err = exitCode(cmd.Run())
	}
	_ = os.RemoveAll(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "confclient:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// assertionKey is the context key of the workload's assertion.
const assertionKey = "valid_jwt"

// environment is env with the credentials of the scenario's context added;
// the assertion goes to a file in dir.
func environment(env []string, scenarioContext, dir string) ([]string, error) {
	if scenarioContext == "" {
		return env, nil
	}
	var ctx map[string]any
	if err := json.Unmarshal([]byte(scenarioContext), &ctx); err != nil {
		return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
	}
	for key, name := range contextVars {
		if v, ok := ctx[key].(string); ok && v != "" {
			env = append(env, name+"="+v)
		}
	}
	if v, ok := ctx[assertionKey].(string); ok && v != "" {
		file := filepath.Join(dir, "assertion")
		if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
			return nil, fmt.Errorf("writing the assertion: %w", err)
		}
		env = append(env, "AGENTHOST_OAUTH_ASSERTION_FILE="+file)
	}
	return env, nil
}
