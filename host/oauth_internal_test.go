package host

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
