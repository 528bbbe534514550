package allowlist

import (
	"net/url"
	"testing"
)

func TestURLPatterns(t *testing.T) {
	tests := []struct {
		pattern, url string
		want         bool
	}{
		{"https://*.corp.example/*", "https://mcp.corp.example/mcp", true},
		{"https://*.corp.example/*", "https://a.b.corp.example/", true},
		{"https://*.corp.example/*", "https://evil.example/x.corp.example/", false},
		{"https://*.corp.example/*", "https://evil.example/?.corp.example", false},
		{"https://*.corp.example/*", "http://mcp.corp.example/mcp", false},
		{"https://*.corp.example/*", "https://mcp.corp.example:8443/mcp", false},
		{"https://*.corp.example/*", "https://mcp.corp.example:443/mcp", true},
		{"https://*.corp.example", "https://MCP.Corp.Example/any/path", true},
		{"http://localhost:*", "http://localhost:3000/mcp", true},
		{"http://localhost:*", "http://localhost/mcp", true},
		{"http://localhost:*", "http://localhost.evil.example:3000/", false},
		{"http://localhost:80[0-9][0-9]/mcp", "http://localhost:8080/mcp", true},
		{"http://localhost:80[0-9][0-9]/mcp", "http://localhost:8080/other", false},
		{"http://127.0.0.1:*/*", "http://127.0.0.1:5000/mcp", true},
		{"http://[::1]:*/*", "http://[::1]:5000/mcp", true},
		{"http*://tools.example/mcp", "https://tools.example/mcp", true},
		{"https://tools.example/mcp", "https://tools.example/MCP", true}, // paths compare case-insensitively
	}
	for _, tt := range tests {
		up, err := parseURLPattern(tt.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tt.pattern, err)
		}
		u, err := url.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := up.match(u); got != tt.want {
			t.Errorf("%s ~ %s = %v, want %v", tt.pattern, tt.url, got, tt.want)
		}
	}
	for _, bad := range []string{"*.corp.example", "https://", "https://:80", "https://host:", "://host", "https://[a-/"} {
		if _, err := parseURLPattern(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzURLPattern: any allowedServers url pattern and server URL are parsed
// and matched without a panic, and a URL with user information is never
// admitted.
func FuzzURLPattern(f *testing.F) {
	for _, s := range [][2]string{
		{"https://*.corp.example/*", "https://mcp.corp.example/mcp"},
		{"http://[::1]:*/*", "http://[::1]:5000/"},
		{"http://localhost:80[0-9][0-9]/mcp", "http://localhost:8080/mcp"},
		{"[a-z]*://[x", "http://u@h/"},
		{"https://*", "https://user@evil.example/"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, raw string) {
		up, err := parseURLPattern(pattern)
		if err != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		up.match(u)
		if _, ok, _ := Admitted([]ServerPattern{{URL: pattern}}, Server{URL: raw}, CommandFile{}); ok && u.User != nil {
			t.Errorf("%q admitted %q, which has user information", pattern, raw)
		}
	})
}
