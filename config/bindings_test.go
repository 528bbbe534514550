package config

import (
	"net/url"
	"testing"
)

func TestBindsServer(t *testing.T) {
	c := &Config{Bindings: []Binding{{Server: "github"}, {Server: "db-*"}}}
	for _, tt := range []struct {
		server string
		want   bool
	}{
		{"github", true},
		{"db-prod", true},
		{"gitlab", false},
		{"db", false},
	} {
		if got := c.BindsServer(tt.server); got != tt.want {
			t.Errorf("BindsServer(%q) = %v, want %v", tt.server, got, tt.want)
		}
	}
	if (&Config{}).BindsServer("github") {
		t.Error("a config without bindings binds a server")
	}
}

func TestURLAdmitter(t *testing.T) {
	if (&Config{}).URLAdmitter("api") != nil {
		t.Fatal("without a managed policy there is a redirect check")
	}
	c := &Config{Managed: &Managed{File: "m.yaml", AllowedServers: []ServerPattern{{URL: "https://mcp.example.com/*"}}}}
	check := c.URLAdmitter("api")
	for _, tt := range []struct {
		target string
		ok     bool
	}{
		{"https://mcp.example.com/v1", true},
		{"https://evil.example.net/v1", false},
	} {
		u, _ := url.Parse(tt.target)
		if err := check(u); (err == nil) != tt.ok {
			t.Errorf("check(%s) = %v, want allowed %v", tt.target, err, tt.ok)
		}
	}
}
