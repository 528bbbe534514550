package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// A 2026-07-28 server over HTTP that refuses the first request as an
// unsupported version while naming that very version as supported (SEP-2575
// lets a server refuse any request so): the host sends its server/discover
// once more and stays on the stateless protocol, never falling back to the
// initialize handshake. Every POST carries MCP-Protocol-Version, and every
// request's _meta the protocol version, client capabilities and client
// info, merged with the host's own fields (a durable call's idempotency
// key).
func TestModernRequestsCarryVersionAndMeta(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "a_tool", "inputSchema": {"type": "object"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	type post struct {
		header string
		method string
		meta   map[string]json.RawMessage
	}
	var (
		mu      sync.Mutex
		posts   []post
		refused bool
	)
	inner := srv.HTTPHandler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			inner.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		mu.Lock()
		posts = append(posts, post{r.Header.Get("MCP-Protocol-Version"), msg.Method, msg.Params.Meta})
		first := !refused && msg.Method != ""
		refused = refused || first
		mu.Unlock()
		if first {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{
				"code": mcp.UNSUPPORTED_PROTOCOL_VERSION, "message": "Unsupported protocol version",
				"data": map[string]any{"supported": []string{"2026-07-28"}, "requested": msg.Params.Meta[mcp.MetaKeyProtocolVersion]}}})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	c := New(context.Background(), "srv", Options{ClientInfo: mcp.Implementation{Name: "agenthost", Version: "test"},
		Config: &config.Server{URL: ts.URL + "/mcp", Type: config.TransportHTTP, ProtocolVersion: config.ProtocolAuto}})
	t.Cleanup(c.Close)
	ctx := context.Background()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if v := c.Snapshot().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %q, want 2026-07-28", v)
	}
	ct := c.Snapshot().Tool("a_tool")
	if ct == nil {
		t.Fatal("a_tool is not listed")
	}
	const key = "io.agenthost/idempotency-key"
	if _, _, err := c.Call(ctx, CallRequest{Tool: ct.Tool, Arguments: json.RawMessage(`{}`), Meta: map[string]any{key: "k-1"}}); err != nil {
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	called := false
	for _, p := range posts {
		if p.method == "" {
			continue // a notification's answer, or no JSON-RPC body
		}
		if p.method == "initialize" {
			t.Errorf("the host fell back to initialize")
		}
		if p.header != "2026-07-28" {
			t.Errorf("%s: MCP-Protocol-Version %q", p.method, p.header)
		}
		for _, field := range []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientCapabilities, mcp.MetaKeyClientInfo} {
			if p.meta[field] == nil {
				t.Errorf("%s: no %s in _meta (%v)", p.method, field, p.meta)
			}
		}
		if p.method == "tools/call" {
			called = true
			if string(p.meta[key]) != `"k-1"` {
				t.Errorf("tools/call: _meta %s = %s, want the idempotency key", key, p.meta[key])
			}
		}
	}
	if !called {
		t.Error("no tools/call was sent")
	}
}
