package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// oauthEnv is the environment of an OAuth e2e run: a state directory of the
// test's own (where the token file lives) and, when browse is set, $BROWSER
// playing the person's browser (the test server's --browse mode GETs the
// authorization URL and follows the redirects to the loopback callback).
func oauthEnv(state string, browse bool) []string {
	env := []string{"XDG_STATE_HOME=" + state, "BROWSER="}
	if browse {
		env[1] = "BROWSER=" + testServerBin + " --browse"
	}
	return env
}

// storedAccessTokens reads the access tokens of the CLI's token file.
func storedAccessTokens(t *testing.T, state string) (tokens []string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(state, "agenthost", "tokens.json")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tokens []struct {
			AccessToken string `json:"access_token"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("token file: %v", err)
	}
	for _, tk := range doc.Tokens {
		tokens = append(tokens, tk.AccessToken)
	}
	return tokens, fi.Mode().Perm()
}

// TestOAuthLogin: `auth login --url` against an OAuth-protected server,
// with $BROWSER playing the browser, stores one token (in a 0600 file of its
// own); `auth status` lists it without its value; `auth logout` deletes it.
func TestOAuthLogin(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "get_time", "inputSchema": obj{"type": "object"},
	}})
	srv := startHTTPServer(t, tools, "--oauth")
	state := t.TempDir()

	r := run(t, oauthEnv(state, true), "auth", "login", "--url", srv.url)
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, "Logged in to "+srv.url) {
		t.Fatalf("login output:\n%s", r)
	}
	tokens, mode := storedAccessTokens(t, state)
	if len(tokens) != 1 || tokens[0] == "" {
		t.Fatalf("stored tokens: %d", len(tokens))
	}
	if runtime.GOOS != "windows" && mode != 0o600 {
		t.Fatalf("token file mode %v", mode)
	}

	st := run(t, oauthEnv(state, false), "auth", "status", "--json")
	wantCode(t, st, 0)
	doc := decodeStdout[struct {
		Tokens []struct {
			Resource, Subject, Issuer string
			Refreshable, DPoP         bool
			DPoPThumbprint            string
		} `json:"tokens"`
	}](t, st)
	if len(doc.Tokens) != 1 || doc.Tokens[0].Resource != srv.url || !doc.Tokens[0].Refreshable || doc.Tokens[0].Issuer == "" ||
		doc.Tokens[0].DPoP || doc.Tokens[0].DPoPThumbprint != "" {
		t.Fatalf("status: %s", st)
	}
	for _, out := range []result{r, st, run(t, oauthEnv(state, false), "auth", "status")} {
		wantNoCanary(t, out, tokens[0])
	}

	// The stored token serves `call --url`, with nobody to log in.
	c := run(t, oauthEnv(state, false), "call", "--url", srv.url, "get_time", "--approve", "auto", "--json")
	wantCode(t, c, 0)
	wantNoCanary(t, c, tokens[0])

	out := run(t, oauthEnv(state, false), "auth", "logout", "--url", srv.url)
	wantCode(t, out, 0)
	if tokens, _ := storedAccessTokens(t, state); len(tokens) != 0 {
		t.Fatalf("%d tokens left after logout", len(tokens))
	}
}

// TestOAuthCallWithoutToken: a call to an OAuth-protected server with no
// stored token logs in through $BROWSER when it is set and then calls the
// tool; with nobody to log in (no terminal, no $BROWSER) it fails with exit
// 8 and a message naming `agenthost auth login`.
func TestOAuthCallWithoutToken(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "get_time", "inputSchema": obj{"type": "object"},
	}})
	srv := startHTTPServer(t, tools, "--oauth")

	nobody := t.TempDir()
	r := run(t, oauthEnv(nobody, false), "call", "--url", srv.url, "get_time", "--approve", "auto", "--json")
	wantCode(t, r, 8)
	msg := wantCallError(t, r, 8, "authorization")
	if !strings.Contains(msg, "agenthost auth login --url "+srv.url) {
		t.Fatalf("message %q does not say how to log in", msg)
	}
	if strings.Contains(r.stderr, "legacy") {
		t.Fatalf("an authorization failure fell back to legacy SSE:\n%s", r)
	}

	browser := t.TempDir()
	r = run(t, oauthEnv(browser, true), "call", "--url", srv.url, "get_time", "--approve", "auto", "--json")
	wantCode(t, r, 0)
	tokens, _ := storedAccessTokens(t, browser)
	if len(tokens) != 1 {
		t.Fatalf("%d tokens stored after the inline login", len(tokens))
	}
	wantNoCanary(t, r, tokens[0])
}

// TestOAuthTokenNeverPrinted: with a stored token, debug logs, the audit
// log, `tools --json` and `call --json` of the protected server never carry
// the access token.
func TestOAuthTokenNeverPrinted(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "get_time", "inputSchema": obj{"type": "object"},
	}})
	srv := startHTTPServer(t, tools, "--oauth")
	state := t.TempDir()
	wantCode(t, run(t, oauthEnv(state, true), "auth", "login", "--url", srv.url), 0)
	tokens, _ := storedAccessTokens(t, state)
	if len(tokens) != 1 {
		t.Fatalf("%d tokens stored", len(tokens))
	}
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	cfg := writeConfig(t, obj{
		"mcpServers": obj{"remote": obj{"url": srv.url}},
		"approvals":  allowAll(),
		"audit":      obj{"path": audit},
	})
	for _, args := range [][]string{
		{"--log-level", "debug", "--config", cfg, "call", "remote", "get_time", "--json"},
		{"--log-level", "debug", "--config", cfg, "tools", "--json"},
		{"--log-level", "debug", "--config", cfg, "servers", "--json"},
		{"--log-level", "debug", "tools", "--url", srv.url, "--json"},
	} {
		r := run(t, oauthEnv(state, false), args...)
		wantCode(t, r, 0)
		wantNoCanary(t, r, tokens[0])
	}
	data, err := os.ReadFile(audit)
	if err != nil || len(data) == 0 {
		t.Fatalf("audit log: %v", err)
	}
	if strings.Contains(string(data), tokens[0]) {
		t.Fatal("the access token is in the audit log")
	}
}

// TestOAuthRunWithoutLogin: `run` with a configured OAuth server, no
// stored token and nobody to log in stops before the turn with exit 8 and
// the command to run.
func TestOAuthRunWithoutLogin(t *testing.T) {
	t.Parallel()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{{
		"name": "get_time", "inputSchema": obj{"type": "object"},
	}})
	srv := startHTTPServer(t, tools, "--oauth")
	cfg := writeConfig(t, obj{"mcpServers": obj{"remote": obj{"url": srv.url}}})
	r := run(t, oauthEnv(t.TempDir(), false), "--config", cfg, "run", "what time is it?")
	wantCode(t, r, 8)
	if !strings.Contains(r.stderr, "agenthost auth login remote") {
		t.Fatalf("stderr does not say how to log in:\n%s", r)
	}
}
