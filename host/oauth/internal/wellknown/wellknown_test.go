package wellknown

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWellKnownOrder(t *testing.T) {
	tests := []struct {
		name string
		fn   func(string) ([]string, error)
		in   string
		want []string
	}{
		{"resource with path: path-based first", ResourceMetadataURLs, "https://ex.com/public/mcp",
			[]string{"https://ex.com/.well-known/oauth-protected-resource/public/mcp", "https://ex.com/.well-known/oauth-protected-resource"}},
		{"resource at root", ResourceMetadataURLs, "https://ex.com/", []string{"https://ex.com/.well-known/oauth-protected-resource"}},
		{"issuer with path", ServerMetadataURLs, "https://auth.ex.com/tenant1",
			[]string{"https://auth.ex.com/.well-known/oauth-authorization-server/tenant1",
				"https://auth.ex.com/.well-known/openid-configuration/tenant1",
				"https://auth.ex.com/tenant1/.well-known/openid-configuration"}},
		{"issuer at root", ServerMetadataURLs, "https://auth.ex.com",
			[]string{"https://auth.ex.com/.well-known/oauth-authorization-server", "https://auth.ex.com/.well-known/openid-configuration"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.fn(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResourceCovers(t *testing.T) {
	tests := []struct {
		resource, server string
		want             bool
	}{
		{"https://ex.com/mcp", "https://ex.com/mcp", true},
		{"https://ex.com/mcp/", "https://ex.com/mcp", true},
		{"https://ex.com", "https://ex.com/mcp", true},
		{"https://EX.com:443/", "https://ex.com/mcp", true},
		{"https://ex.com/mc", "https://ex.com/mcp", false},
		{"https://ex.com/other", "https://ex.com/mcp", false},
		{"https://evil.com/mcp", "https://ex.com/mcp", false},
		{"http://ex.com/mcp", "https://ex.com/mcp", false},
		{"https://ex.com:8443/mcp", "https://ex.com/mcp", false},
	}
	for _, tt := range tests {
		if got := ResourceCovers(tt.resource, tt.server); got != tt.want {
			t.Errorf("ResourceCovers(%q, %q) = %v, want %v", tt.resource, tt.server, got, tt.want)
		}
	}
}
