package e2e

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOAuthWorkloadIdentity: `auth login --url` with the jwt-bearer grant
// (workload identity federation) gets a DPoP-bound token without a
// browser, the assertion coming from a command; the stored token (with its
// key) then serves `call --url`, both servers' nonces honoured. A refused
// assertion fails the login with exit 8 and no browser login in its place.
// The assertion and the DPoP key never show in any output, debug logs
// included.
func TestOAuthWorkloadIdentity(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the assertion command is a shell script")
	}
	t.Parallel()
	const assertion = "CANARY.e2e-workload-assertion.91c3"
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{"name": "get_time", "inputSchema": obj{"type": "object"}}})
	srv := startHTTPServer(t, tools, "--oauth", "--oauth-dpop", "--oauth-assertion", assertion)
	dir := t.TempDir()
	good := filepath.Join(dir, "good-assertion")
	bad := filepath.Join(dir, "refused-assertion")
	for path, value := range map[string]string{good: assertion, bad: "CANARY.refused.assertion"} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+value+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := func(state, command string) []string {
		return append(oauthEnv(state, true), "AGENTHOST_OAUTH_GRANT=jwt-bearer",
			"AGENTHOST_OAUTH_ASSERTION_COMMAND="+command, "AGENTHOST_OAUTH_DPOP=required")
	}

	state := t.TempDir()
	r := run(t, env(state, good), "auth", "login", "--url", srv.url)
	wantCode(t, r, 0)
	if strings.Contains(r.stderr, "browser") {
		t.Fatalf("the jwt-bearer login opened a browser:\n%s", r)
	}
	data, err := os.ReadFile(filepath.Join(state, "agenthost", "tokens.json"))
	if err != nil || !strings.Contains(string(data), `"dpop_key"`) {
		t.Fatalf("the token file keeps no DPoP key (%v)", err)
	}
	c := run(t, env(state, good), "--log-level", "debug", "call", "--url", srv.url, "get_time", "--approve", "auto", "--json")
	wantCode(t, c, 0)
	tokens, _ := storedAccessTokens(t, state)
	// auth status says the token is DPoP-bound and names its key by
	// thumbprint, never the key.
	st := run(t, env(state, good), "auth", "status", "--json")
	wantCode(t, st, 0)
	doc := decodeStdout[struct {
		Tokens []struct {
			DPoP           bool   `json:"dpop"`
			DPoPThumbprint string `json:"dpopThumbprint"`
		} `json:"tokens"`
	}](t, st)
	if len(doc.Tokens) != 1 || !doc.Tokens[0].DPoP || len(doc.Tokens[0].DPoPThumbprint) != 43 {
		t.Fatalf("status: want one DPoP-bound token with its key's thumbprint\n%s", st)
	}
	text := run(t, env(state, good), "auth", "status")
	wantCode(t, text, 0)
	if !strings.Contains(text.stdout, "DPOP") || !strings.Contains(text.stdout, "jkt "+doc.Tokens[0].DPoPThumbprint) {
		t.Fatalf("status text: want the DPOP column with the thumbprint\n%s", text)
	}
	for _, out := range []result{r, c, st, text} {
		wantNoCanary(t, out, append(tokens, "CANARY", dpopKeyOf(t, data))...)
	}

	refused := run(t, env(t.TempDir(), bad), "auth", "login", "--url", srv.url)
	wantCode(t, refused, 8)
	if !strings.Contains(refused.stderr, "invalid_grant") || strings.Contains(refused.stderr, "browser") {
		t.Fatalf("a refused assertion: want the server's invalid_grant and no browser login\n%s", refused)
	}
	wantNoCanary(t, refused, "CANARY")
}

// dpopKeyOf is the DPoP key of the token file's first token.
func dpopKeyOf(t *testing.T, file []byte) string {
	t.Helper()
	_, rest, ok := strings.Cut(string(file), `"dpop_key": "`)
	key, _, _ := strings.Cut(rest, `"`)
	if !ok || len(key) < 40 {
		t.Fatal("no DPoP key in the token file")
	}
	return key
}
