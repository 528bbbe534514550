package mcptest

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

var transports = []string{"stdio", "http", "inprocess"}

// TestNegotiationWithMCPGo drives the server with mcp-go's real client in
// both eras, over both transports, with and without the extension.
func TestNegotiationWithMCPGo(t *testing.T) {
	for _, tr := range transports {
		for _, legacy := range []bool{true, false} {
			for _, declare := range []bool{true, false} {
				name := tr + map[bool]string{true: "/legacy", false: "/modern"}[legacy] + map[bool]string{true: "/ext", false: "/noext"}[declare]
				t.Run(name, func(t *testing.T) {
					var exts []string
					if declare {
						exts = []string{SecureParamsExtension}
					}
					var srv *Server
					var url string
					if tr == "http" {
						url, srv = StartHTTP(t, testOptions(t))
					} else {
						srv = newServer(t, testOptions(t))
					}
					c, init := mcpClient(t, tr, srv, url, legacy, exts)
					wantVersion := map[bool]string{true: "2025-11-25", false: "2026-07-28"}[legacy]
					if init.ProtocolVersion != wantVersion {
						t.Errorf("protocol version %q, want %q", init.ProtocolVersion, wantVersion)
					}
					if _, ok := init.Capabilities.Extensions[SecureParamsExtension]; !ok {
						t.Errorf("extension not advertised: %v", init.Capabilities.Extensions)
					}
					if init.ServerInfo.Name != "mcptestserver" {
						t.Errorf("server info %+v", init.ServerInfo)
					}

					ctx := ctxTimeout(t, 10*time.Second)
					list, err := c.ListTools(ctx, mcp.ListToolsRequest{})
					if err != nil {
						t.Fatalf("ListTools: %v", err)
					}
					var names []string
					for _, tool := range list.Tools {
						names = append(names, tool.Name)
					}
					want := toolsWithoutExtension
					if declare {
						want = allTestToolNames
					}
					if !slices.Equal(names, want) {
						t.Errorf("tools %v, want %v", names, want)
					}
					assertServedSchemas(t, srv, declare)
					assertReceivedHandshake(t, srv, tr, legacy, declare)

					res, err := callTool(ctx, c, "echo", map[string]any{"text": "hi"})
					if err != nil {
						t.Fatalf("call echo: %v", err)
					}
					var summary struct {
						Tool                string         `json:"tool"`
						Arguments           map[string]any `json:"arguments"`
						SecureArgumentNames []string       `json:"secureArgumentNames"`
					}
					if err := json.Unmarshal([]byte(resultText(t, res)), &summary); err != nil {
						t.Fatalf("default text is not the JSON summary: %v", err)
					}
					if summary.Tool != "echo" || summary.Arguments["text"] != "hi" || summary.SecureArgumentNames == nil || len(summary.SecureArgumentNames) != 0 {
						t.Errorf("summary %+v", summary)
					}
					if rt := string(lastSentResult(t, srv, "tools/call")["resultType"]); legacy != (rt == "") {
						t.Errorf("resultType %s in era legacy=%v", rt, legacy)
					}

					// mcp-go cannot send secureArguments: the server answers
					// -32602 (missing) when negotiated, -32021 otherwise.
					_, err = callTool(ctx, c, "execute_sql", map[string]any{"query": "SELECT 1"})
					if declare {
						if !errors.Is(err, mcp.ErrInvalidParams) || !strings.Contains(err.Error(), `missing required secure parameter "project_id"`) {
							t.Errorf("call without secure args: %v", err)
						}
					} else {
						var missing mcp.MissingRequiredClientCapabilityError
						if !errors.As(err, &missing) {
							t.Errorf("call without capability: %v, want -32021", err)
						}
					}
				})
			}
		}
	}
}

// assertServedSchemas checks the raw tools/list JSON, which mcp-go drops
// secureInputSchema from.
func assertServedSchemas(t *testing.T, srv *Server, negotiated bool) {
	t.Helper()
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(lastSentResult(t, srv, "tools/list")["tools"], &tools); err != nil {
		t.Fatal(err)
	}
	withSecure := map[string]bool{}
	for _, tool := range tools {
		var name string
		_ = json.Unmarshal(tool["name"], &name)
		_, withSecure[name] = tool["secureInputSchema"]
		if _, leaked := tool["x-test"]; leaked {
			t.Errorf("tool %s served with x-test", name)
		}
	}
	for _, name := range []string{"execute_sql", "bound", "typed", "routed", "confirm_secure", "echo_secure"} {
		if _, listed := withSecure[name]; !listed {
			continue // omitted entirely (required secure params, no extension)
		}
		if withSecure[name] != negotiated {
			t.Errorf("tool %s: secureInputSchema served=%v, negotiated=%v", name, withSecure[name], negotiated)
		}
	}
	if withSecure["echo"] {
		t.Error("plain tool served with secureInputSchema")
	}
}

func assertReceivedHandshake(t *testing.T, srv *Server, tr string, legacy, declared bool) {
	t.Helper()
	rec := srv.Recording()
	if legacy {
		if n := len(rec.Messages("initialize")); n != 1 {
			t.Errorf("%d initialize messages", n)
		}
		if n := len(rec.Messages("notifications/initialized")); n != 1 {
			t.Errorf("%d initialized notifications", n)
		}
		if n := len(rec.Messages("server/discover")); n != 0 {
			t.Errorf("pinned legacy client sent server/discover")
		}
		return
	}
	if len(rec.Messages("server/discover")) == 0 || len(rec.Messages("initialize")) != 0 {
		t.Errorf("modern handshake: discover=%d initialize=%d", len(rec.Messages("server/discover")), len(rec.Messages("initialize")))
	}
	lists := rec.Messages("tools/list")
	if len(lists) == 0 {
		t.Fatal("no tools/list received")
	}
	var msg wire.Message
	if err := lists[0].Decode(&msg); err != nil {
		t.Fatal(err)
	}
	meta := parseMeta(msg.Params)
	if meta.version != "2026-07-28" {
		t.Errorf("tools/list meta version %q", meta.version)
	}
	if _, ok := meta.extensions[SecureParamsExtension]; ok != declared {
		t.Errorf("tools/list declared extension=%v, want %v", ok, declared)
	}
	if tr == "http" {
		h := lists[0].Headers
		if h["Mcp-Method"] != "tools/list" || h["Mcp-Protocol-Version"] != "2026-07-28" {
			t.Errorf("modern headers %v", h)
		}
	}
}

func TestEraRestrictions(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr+"/legacy-only server, default client falls back", func(t *testing.T) {
			opts := testOptions(t)
			opts.Eras = []string{EraLegacy}
			c, srv := mcpSetup(t, tr, false, nil, opts)
			if v := c.ProtocolVersion(); v != "2025-11-25" {
				t.Errorf("negotiated %q, want fallback to 2025-11-25", v)
			}
			sent := srv.Recording().Sent("server/discover")
			if len(sent) != 1 {
				t.Fatalf("%d discover answers", len(sent))
			}
			var resp Response
			if err := sent[0].Decode(&resp); err != nil || resp.Error == nil || resp.Error.Code != CodeMethodNotFound {
				t.Errorf("discover answer %s, want -32601", sent[0].Message)
			}
		})
		t.Run(tr+"/modern-only server refuses a pinned legacy client", func(t *testing.T) {
			opts := testOptions(t)
			opts.Eras = []string{EraModern}
			var srv *Server
			var url string
			if tr == "http" {
				url, srv = StartHTTP(t, opts)
			} else {
				srv = newServer(t, opts)
			}
			legacyClientExpectingFailure(t, tr, srv, url)
			sent := srv.Recording().Sent("initialize")
			var resp Response
			if len(sent) != 1 || sent[0].Decode(&resp) != nil || resp.Error == nil || resp.Error.Code != CodeUnsupportedVersion {
				t.Fatalf("initialize answers %v, want one -32022", sent)
			}
			if !strings.Contains(string(resp.Error.Data), `"supported":["2026-07-28"]`) {
				t.Errorf("data %s", resp.Error.Data)
			}
		})
	}
}

func legacyClientExpectingFailure(t *testing.T, tr string, srv *Server, url string) {
	t.Helper()
	var inner transport.Interface
	if tr == "http" {
		h, err := transport.NewStreamableHTTP(url)
		if err != nil {
			t.Fatal(err)
		}
		inner = h
	} else {
		p := startStdio(t, srv)
		inner = transport.NewIO(p.out, p.in, nil)
	}
	c := client.NewClient(inner, client.WithProtocolVersion("2025-11-25"))
	ctx := ctxTimeout(t, 5*time.Second)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{}); err == nil {
		t.Fatal("legacy initialize succeeded against a modern-only server")
	}
}
