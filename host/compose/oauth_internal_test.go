package compose

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
)

func TestOAuthFromEnv(t *testing.T) {
	if o := OAuthFromEnv(func(string) string { return "" }); o != nil {
		t.Fatalf("no variables: %+v", o)
	}
	env := map[string]string{"AGENTHOST_OAUTH_CLIENT_ID": "cid", "AGENTHOST_OAUTH_SCOPES": "a  b", "AGENTHOST_OAUTH_GRANT": "client_credentials"}
	o := OAuthFromEnv(func(k string) string { return env[k] })
	if o == nil || o.ClientID != "cid" || strings.Join(o.Scopes, ",") != "a,b" || o.Grant != config.GrantClientCredentials {
		t.Fatalf("OAuthFromEnv = %+v", o)
	}
	env = map[string]string{"AGENTHOST_OAUTH_IDP_TOKEN_ENDPOINT": "https://idp.example.com/token", "AGENTHOST_OAUTH_IDP_CLIENT_ID": "icid",
		"AGENTHOST_OAUTH_IDP_CLIENT_SECRET": "isec", "AGENTHOST_OAUTH_ID_TOKEN": "idt", "AGENTHOST_OAUTH_ID_TOKEN_FILE": "f"}
	o = OAuthFromEnv(func(k string) string { return env[k] })
	if o == nil || o.IDPTokenEndpoint != "https://idp.example.com/token" || o.IDPClientID != "icid" || o.IDPClientSecret != "isec" || o.IDToken != "idt" || o.IDTokenFile != "f" {
		t.Fatalf("OAuthFromEnv = %+v", o)
	}
	env = map[string]string{"AGENTHOST_OAUTH_ASSERTION_FILE": "af", "AGENTHOST_OAUTH_ASSERTION_COMMAND": "ac",
		"AGENTHOST_OAUTH_ASSERTION_SHA256": "00", "AGENTHOST_OAUTH_DPOP": "required"}
	o = OAuthFromEnv(func(k string) string { return env[k] })
	if o == nil || o.AssertionFile != "af" || o.AssertionCommand != "ac" || o.AssertionSHA256 != "00" || o.DPoP != config.DPoPRequired {
		t.Fatalf("OAuthFromEnv = %+v", o)
	}
	for k := range env {
		if OAuthFromEnv(func(name string) string { return map[string]string{k: env[k]}[name] }) == nil {
			t.Errorf("OAuthFromEnv ignores %s alone", k)
		}
	}
}

func TestIDTokenSource(t *testing.T) {
	const canary = "CANARY-ID-TOKEN"
	if got, err := credentialSource("oauth.idTokenFile", canary, "")(context.Background()); err != nil || got != canary {
		t.Fatalf("value source = %q, %v", got, err)
	}
	file := filepath.Join(t.TempDir(), "id_token")
	if err := os.WriteFile(file, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := credentialSource("oauth.idTokenFile", "", file)
	if got, err := src(context.Background()); err != nil || got != canary {
		t.Fatalf("file source = %q, %v", got, err)
	}
	// Read each time: a rotated token is picked up.
	if err := os.WriteFile(file, []byte("rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, _ := src(context.Background()); got != "rotated" {
		t.Fatalf("after rotation = %q", got)
	}
	if _, err := credentialSource("oauth.idTokenFile", "", file+".missing")(context.Background()); err == nil || !strings.Contains(err.Error(), "oauth.idTokenFile") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestOAuthEnabled(t *testing.T) {
	tests := []struct {
		name string
		sc   *config.Server
		want bool
	}{
		{"url", &config.Server{URL: "https://m.example.com/mcp"}, true},
		{"stdio", &config.Server{Command: "x"}, false},
		{"disabled", &config.Server{URL: "https://m.example.com/mcp", OAuth: &config.OAuth{Disabled: true}}, false},
		{"static authorization header", &config.Server{URL: "https://m.example.com/mcp", Headers: map[string]string{"authorization": "Bearer x"}}, false},
	}
	for _, tt := range tests {
		if got := OAuthEnabled(tt.sc); got != tt.want {
			t.Errorf("%s: OAuthEnabled = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// $BROWSER: the first entry of a colon-separated list; %s takes the URL,
// else the URL is the last argument.
func TestBrowserOpener(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "browser.sh")
	out := filepath.Join(dir, "out")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" > "+out+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, ok := BrowserOpener(func(string) string { return "" }); ok {
		t.Fatal("an empty $BROWSER is a browser")
	}
	tests := []struct{ browser, want string }{
		{script, "https://as.example.com/authorize?x=1"},
		{script + " --new-window %s --flag:other-browser", "--new-window https://as.example.com/authorize?x=1 --flag"},
	}
	for _, tt := range tests {
		_ = os.Remove(out)
		open, ok := BrowserOpener(func(string) string { return tt.browser })
		if !ok {
			t.Fatal("no opener")
		}
		if err := open(context.Background(), "https://as.example.com/authorize?x=1"); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for range 500 { // the browser runs in the background
			if got, _ = os.ReadFile(out); len(got) > 0 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if strings.TrimSpace(string(got)) != tt.want {
			t.Errorf("BROWSER=%q ran with %q, want %q", tt.browser, got, tt.want)
		}
	}
}

func TestNewOAuthClientIDJAG(t *testing.T) {
	sc := &config.Server{URL: "https://m.example.com/mcp", OAuth: &config.OAuth{Grant: config.GrantIDJAG, ClientID: "a",
		IDPTokenEndpoint: "https://idp.example.com/token", IDToken: "idt"}}
	c, err := NewOAuthClient(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Unattended() {
		t.Error("the id-jag grant's client needs a login")
	}
	sc.OAuth.IDToken = ""
	if _, err := NewOAuthClient(sc, nil); err == nil || !strings.Contains(err.Error(), "ID token") {
		t.Errorf("without an ID token: %v", err)
	}
}
