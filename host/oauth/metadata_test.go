package oauth

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/oauth/internal/wellknown"
)

func TestParseResourceMetadata(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"ok", `{"resource":"https://mcp.example.com/mcp","authorization_servers":["https://auth.example.com"]}`, ""},
		{"no resource", `{"authorization_servers":["https://auth.example.com"]}`, "no resource"},
		{"relative resource", `{"resource":"/mcp"}`, "not an absolute"},
		{"http authorization server", `{"resource":"https://m.example.com","authorization_servers":["http://auth.example.com"]}`, "must use https"},
		{"loopback http authorization server", `{"resource":"http://127.0.0.1:1/mcp","authorization_servers":["http://127.0.0.1:2"]}`, ""},
		{"fragment", `{"resource":"https://m.example.com","authorization_servers":["https://a.example.com#x"]}`, "fragment"},
		{"not json", `<html>`, "not valid JSON"},
		{"wrong type", `{"resource":1}`, "not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseResourceMetadata([]byte(tt.in))
			checkErr(t, err, tt.wantErr)
		})
	}
}

func TestParseServerMetadata(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"ok", `{"issuer":"https://a.example.com","authorization_endpoint":"https://a.example.com/authorize","token_endpoint":"https://a.example.com/token"}`, ""},
		{"no issuer", `{"token_endpoint":"https://a.example.com/token"}`, "no issuer"},
		{"no token endpoint", `{"issuer":"https://a.example.com"}`, "no token_endpoint"},
		{"http endpoint", `{"issuer":"https://a.example.com","token_endpoint":"http://a.example.com/token"}`, "must use https"},
		{"javascript endpoint", `{"issuer":"https://a.example.com","token_endpoint":"https://a.example.com/t","authorization_endpoint":"javascript:alert(1)"}`, "not an absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseServerMetadata([]byte(tt.in))
			checkErr(t, err, tt.wantErr)
		})
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v, want one containing %q", err, want)
	}
}

func TestCanonicalResource(t *testing.T) {
	tests := []struct{ in, want string }{
		{"HTTPS://Ex.COM/mcp", "https://ex.com/mcp"},
		{"https://ex.com/", "https://ex.com"},
		{"https://ex.com/mcp?x=1#f", "https://ex.com/mcp"},
	}
	for _, tt := range tests {
		got, err := CanonicalResource(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("CanonicalResource(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := CanonicalResource("ftp://x/y"); err == nil {
		t.Error("CanonicalResource accepted ftp")
	}
}

func FuzzParseMetadata(f *testing.F) {
	for _, s := range []string{
		`{"resource":"https://m.example.com/mcp","authorization_servers":["https://a.example.com"],"scopes_supported":["a"]}`,
		`{"issuer":"https://a.example.com","token_endpoint":"https://a.example.com/t","code_challenge_methods_supported":["S256"]}`,
		`{"issuer":1}`, `[]`, `null`, `{"resource":"http://[::1]:1/x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, err := ParseResourceMetadata(data); err == nil {
			if m.Resource == "" {
				t.Fatal("accepted metadata without a resource")
			}
		}
		if m, err := ParseServerMetadata(data); err == nil {
			if m.Issuer == "" || m.TokenEndpoint == "" {
				t.Fatal("accepted metadata without issuer or token endpoint")
			}
			if wellknown.CheckURL("token_endpoint", m.TokenEndpoint, true) != nil {
				t.Fatal("accepted an insecure token endpoint")
			}
		}
	})
}
