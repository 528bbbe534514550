package compose

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

func noEnv(string) string { return "" }

func TestAdHocConfig(t *testing.T) {
	for _, tc := range []struct {
		url, transport string
		wantType       string
		param, msg     string
	}{
		{"http://127.0.0.1:9/mcp", "", "http", "", ""},
		{"http://127.0.0.1:9/mcp", "http", "http", "", ""},
		{"https://example.test/mcp", "sse", "sse", "", ""},
		{"ftp://example.test", "", "", "url", `url: "ftp://example.test" is not an http(s) URL`},
		{"http://", "", "", "url", `url: "http://" is not an http(s) URL`},
		{"::", "", "", "url", `url: "::" is not an http(s) URL`},
		{"http://127.0.0.1:9/", "ws", "", "transport", `transport: "ws" is not http or sse`},
	} {
		t.Run(tc.url+" "+tc.transport, func(t *testing.T) {
			cfg, err := AdHocConfig(tc.url, tc.transport, noEnv)
			if tc.msg != "" {
				var bad *AdHocError
				if !errors.As(err, &bad) || bad.Param != tc.param || err.Error() != tc.msg {
					t.Fatalf("%v, want %s: %q", err, tc.param, tc.msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.MCPServers) != 1 {
				t.Errorf("servers %v, want the ad-hoc one only", cfg.MCPServers)
			}
			s := cfg.MCPServers[AdHocServer]
			if s == nil || s.URL != tc.url || string(s.Type) != tc.wantType {
				t.Fatalf("server %+v", s)
			}
			// One ask for one approver, whatever the tool.
			a := cfg.Approvals
			if a.NoMatch != "ask" || len(a.Catalogue) != 1 || a.Catalogue[0].Server != AdHocServer || a.Catalogue[0].Tool != "*" ||
				a.Catalogue[0].Metadata.MinTrustLevel != 1 || *a.Catalogue[0].Metadata.ApprovalRecommendation != "single" {
				t.Errorf("approvals %+v", a)
			}
		})
	}
}

func TestTryLegacySSE(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap *host.ServerSnapshot
		want bool
	}{
		{"no server", nil, false},
		{"connected", &host.ServerSnapshot{Status: host.StatusConnected}, false},
		{"refused", &host.ServerSnapshot{Status: host.StatusError, Error: "dial tcp 127.0.0.1:1: connect: connection refused"}, false},
		{"no such host", &host.ServerSnapshot{Status: host.StatusError, Error: "lookup x: no such host"}, false},
		{"timed out", &host.ServerSnapshot{Status: host.StatusError, Error: "read: i/o timeout"}, false},
		{"deadline", &host.ServerSnapshot{Status: host.StatusError, Error: "context deadline exceeded"}, false},
		{"network", &host.ServerSnapshot{Status: host.StatusError, Error: "connect: network is unreachable"}, false},
		{"oauth", &host.ServerSnapshot{Status: host.StatusError, Error: "oauth: the server requires authorization"}, false},
		{"405", &host.ServerSnapshot{Status: host.StatusError, Error: "405 Method Not Allowed"}, true},
		{"html", &host.ServerSnapshot{Status: host.StatusError, Error: "unexpected content type text/html"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := TryLegacySSE(tc.snap); got != tc.want {
				t.Errorf("TryLegacySSE = %t, want %t", got, tc.want)
			}
		})
	}
}

// legacySSE serves one tool over the legacy HTTP+SSE transport, on
// 127.0.0.1; its URL is the SSE endpoint's.
func legacySSE(t *testing.T) string {
	t.Helper()
	m := server.NewMCPServer("legacy", "1.0.0", server.WithToolCapabilities(false))
	m.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("ok"), nil
	})
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	ts.Config.Handler = server.NewSSEServer(m, server.WithBaseURL(base))
	ts.Start()
	t.Cleanup(ts.Close)
	return base + "/sse"
}

// TestConnectAdHoc: a legacy SSE server is reached over SSE after
// streamable HTTP fails; a server that fails both ways keeps the HTTP error;
// an unreachable one is not tried again.
func TestConnectAdHoc(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusMethodNotAllowed)
	}))
	t.Cleanup(broken.Close)
	refused := httptest.NewServer(http.NotFoundHandler())
	refusedURL := refused.URL + "/mcp"
	refused.Close()

	for _, tc := range []struct {
		name, url string
		want      Fallback
		builds    int
	}{
		{"legacy SSE", legacySSE(t), FallbackSSE, 1},
		{"neither", broken.URL + "/mcp", FallbackFailed, 1},
		{"unreachable", refusedURL, FallbackNone, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			newHost := func(cfg *config.Config) (*host.Host, error) {
				h, err := New(ctx, cfg, Options{})
				if err == nil {
					t.Cleanup(func() { _ = h.Close() })
				}
				return h, err
			}
			cfg, err := AdHocConfig(tc.url, "", noEnv)
			if err != nil {
				t.Fatal(err)
			}
			h, err := newHost(cfg)
			if err != nil {
				t.Fatal(err)
			}
			builds := 0
			c, err := ConnectAdHoc(ctx, h, tc.url, noEnv, func(cfg *config.Config) (*host.Host, error) {
				builds++
				if s := cfg.MCPServers[AdHocServer]; s == nil || s.Type != "sse" || s.URL != tc.url {
					t.Errorf("the fallback's server %+v", s)
				}
				return newHost(cfg)
			})
			if err != nil {
				t.Fatal(err)
			}
			if c.Fallback != tc.want || builds != tc.builds {
				t.Fatalf("fallback %d after %d builds, want %d after %d", c.Fallback, builds, tc.want, tc.builds)
			}
			snap := c.Host.Server(AdHocServer)
			switch tc.want {
			case FallbackSSE:
				if snap.Status != host.StatusConnected || len(snap.Tools) != 1 {
					t.Errorf("over SSE: %+v", snap)
				}
			case FallbackFailed:
				if c.HTTPError == "" || c.Host == h {
					t.Errorf("both failed: %+v", c)
				}
			case FallbackNone:
				if c.Host != h || snap.Status != host.StatusError {
					t.Errorf("unreachable: %+v", snap)
				}
			}
		})
	}
}
