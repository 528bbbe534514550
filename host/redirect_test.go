package host_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/internal/httpredirect"
	"github.com/agenthost/agenthost/internal/httpredirect/redirecttest"
)

const canaryAuthorization, canaryAPIKey = "Bearer CANARY-MCP-AUTH-31c9", "CANARY-MCP-KEY-e04b"

// An MCP server reached by url that answers with a redirect: within its
// origin the redirect is followed with the configured headers; to another
// origin (another port of the same host here) it is refused and the other
// origin receives nothing, neither the configured headers nor the
// request; under a managed policy every hop must be admitted. Both
// transports reached by url (streamable HTTP, and SSE, whose first request
// is the GET of its stream) use the one client.
func TestMCPRedirects(t *testing.T) {
	tests := []struct {
		name string
		typ  config.Transport
		// start is where the configured origin redirects: to "other"
		// (the other origin) or to its own "/real" path.
		start     string
		allowed   []config.ServerPattern
		wantError string
	}{
		{name: "same origin", typ: config.TransportHTTP, start: "self"},
		{name: "another port", typ: config.TransportHTTP, start: "other", wantError: "refused"},
		{name: "another port, SSE", typ: config.TransportSSE, start: "other", wantError: "refused"},
		{name: "same origin under a managed policy that admits the target", typ: config.TransportHTTP, start: "self",
			allowed: []config.ServerPattern{{URL: "http://127.0.0.1:*/*"}}},
		{name: "same origin to a path the managed policy does not admit", typ: config.TransportHTTP, start: "self",
			allowed: []config.ServerPattern{{URL: "http://127.0.0.1:*/mcp"}}, wantError: "not allowed by the managed policy"},
		{name: "another port under a managed policy that admits it", typ: config.TransportHTTP, start: "other",
			allowed: []config.ServerPattern{{URL: "http://127.0.0.1:*/*"}}, wantError: "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const path = "/real"
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "echo", "inputSchema": {"type": "object"}}]`), Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			serve := srv.HTTPHandler()
			other := redirecttest.New(t, serve)
			configured := redirecttest.New(t, nil)
			target := configured.URL
			if tt.start == "other" {
				target = other.URL
			}
			configured.Handle(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, "/real") {
					serve.ServeHTTP(w, r)
					return
				}
				http.Redirect(w, r, target+path, http.StatusTemporaryRedirect)
			}))
			url := configured.URL + "/mcp"
			cfg := &config.Config{MCPServers: map[string]*config.Server{"s": {
				URL: url, Type: tt.typ, ConnectTimeout: 5 * time.Second,
				Headers: map[string]string{"Authorization": canaryAuthorization, "X-Api-Key": canaryAPIKey},
			}}}
			if tt.allowed != nil {
				cfg.Managed = &config.Managed{File: "managed.yaml", AllowedServers: tt.allowed}
			}
			cfg.ApplyDefaults()
			h, err := host.New(host.Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = h.Refresh(ctx, "s")
			if n := len(other.Requests()); tt.start == "other" && n != 0 {
				t.Fatalf("the other origin received %d requests (Authorization seen: %t, X-Api-Key seen: %t)",
					n, other.Saw("CANARY-MCP-AUTH"), other.Saw(canaryAPIKey))
			}
			if tt.wantError == "" {
				if err != nil {
					t.Fatal(err)
				}
				if snap := h.Server("s"); snap.Status != host.StatusConnected || len(snap.Tools) != 1 {
					t.Fatalf("status %s, %d tools, %s", snap.Status, len(snap.Tools), snap.Error)
				}
				for _, r := range configured.Requests() {
					if r.Header.Get("Authorization") != canaryAuthorization || r.Header.Get("X-Api-Key") != canaryAPIKey {
						t.Fatalf("%s %s arrived without the configured headers", r.Method, r.Path)
					}
				}
				return
			}
			if !errors.Is(err, httpredirect.ErrRefused) || !strings.Contains(err.Error(), tt.wantError) {
				t.Fatalf("err = %v, want a refused redirect (%q)", err, tt.wantError)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Fatalf("the error shows a configured header: %v", err)
			}
			for _, r := range configured.Requests() {
				if strings.HasPrefix(r.Path, "/real") {
					t.Fatalf("the refused hop was sent: %s %s", r.Method, r.Path)
				}
			}
		})
	}
}
