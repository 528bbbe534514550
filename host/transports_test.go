package host

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// A server the embedding process hands over as a transport is a server
// like any other: both eras, secure arguments, reconnects after its
// connection is lost (with a fresh transport from the factory).
func TestTransportsOption(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(secureTools)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = srv.Close() })
			made := 0
			cfg := &config.Config{
				MCPServers: map[string]*config.Server{"db": {ProtocolVersion: era, CallTimeout: 5 * time.Second}},
				Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
					"project_id": {Value: "retail-prod"}, "instance": {Session: "instance"}}}},
				Approvals: readsAllowed(),
			}
			cfg.ApplyDefaults()
			h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
				"db": func() (transport.Interface, error) { made++; return srv.InProcessTransport(), nil },
			}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = h.Close() })
			ctx := context.Background()
			h.Connect(ctx)
			if snap := h.Server("db"); snap.Status != StatusConnected || !snap.SecureParams || snap.ProtocolVersion != era {
				t.Fatalf("snapshot: %s %s %v %s", snap.Status, snap.Error, snap.SecureParams, snap.ProtocolVersion)
			}
			s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
			if _, err := s.CallTool(ctx, "db", "execute_sql", json.RawMessage(`{"query":"SELECT 1"}`)); err != nil {
				t.Fatal(err)
			}
			calls := srv.Recording().Messages("tools/call")
			if len(calls) != 1 || !strings.Contains(string(calls[0].Params()["secureArguments"]), canary) {
				t.Fatalf("the in-process server did not get the secure arguments: %d calls", len(calls))
			}
			if made != 1 {
				t.Errorf("factory called %d times for one connection, want 1", made)
			}
		})
	}
	t.Run("factory failure is a connection failure", func(t *testing.T) {
		cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {}}}
		cfg.ApplyDefaults()
		h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
			"db": func() (transport.Interface, error) { return nil, errors.New("no such pool") },
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = h.Close() })
		h.Connect(context.Background())
		if snap := h.Server("db"); snap.Status != StatusError || !strings.Contains(snap.Error, "no such pool") {
			t.Errorf("snapshot %s %q, want failed with the factory's error", snap.Status, snap.Error)
		}
	})
	t.Run("unknown server", func(t *testing.T) {
		cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {}}}
		cfg.ApplyDefaults()
		_, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
			"other": func() (transport.Interface, error) { return nil, nil },
		}})
		if err == nil || !strings.Contains(err.Error(), `"other"`) {
			t.Errorf("New with a transport for an unconfigured server: %v", err)
		}
	})
}

// garblingTransport hands back tools/list results that are not valid
// JSON, as a broken custom transport could.
type garblingTransport struct{ transport.Interface }

func (g garblingTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	resp, err := g.Interface.SendRequest(ctx, req)
	if err == nil && req.Method == "tools/list" && resp.Error == nil {
		garbled := *resp
		garbled.Result = json.RawMessage(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}] trailing garbage}`)
		return &garbled, nil
	}
	return resp, err
}

// Only pages that mcp-go's own transports decoded skip validation: a
// transport handed in may deliver anything, and its invalid page is
// refused, not half read.
func TestPagesFromHandedInTransportsAreValidated(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(secureTools)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {CallTimeout: 5 * time.Second}}}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) { return garblingTransport{srv.InProcessTransport()}, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	snap := h.Server("db")
	if snap.Status != StatusError || !strings.Contains(snap.Error, "tools/list") || len(snap.Tools) != 0 {
		t.Errorf("snapshot %s %q with %d tools, want a tools/list error and no tools", snap.Status, snap.Error, len(snap.Tools))
	}
}

// An extension advertised as null is not negotiated: no secureArguments are
// ever sent, and tools that declare a secureInputSchema are excluded.
func TestNullExtensionIsNotNegotiated(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			h, _, _ := testHost(t, era, mcptest.Options{Extensions: []string{mcptest.SecureParamsExtension}, NullExtensions: true})
			h.Connect(context.Background())
			snap := h.Server("db")
			if snap.Status != StatusConnected {
				t.Fatalf("not connected: %s", snap.Error)
			}
			if snap.SecureParams || snap.Extension != "" {
				t.Fatalf("a null advertisement negotiated %q", snap.Extension)
			}
			for _, ct := range snap.Tools {
				if ct.Tool.HasSecureSchema && ct.Status != ToolExcluded {
					t.Errorf("%s declares secure params but is %s", ct.Tool.Name, ct.Status)
				}
			}
		})
	}
}

// A -32021 answer's data names the extension the server requires; the
// operator's error says which id to configure.
func TestMissingCapabilityNamesTheRequiredExtension(t *testing.T) {
	tools := `[{"name": "needs_alias", "inputSchema": {"type": "object"},
	  "x-test": {"errorCode": -32021, "errorMessage": "Missing required client capability",
	             "errorData": {"requiredCapabilities": {"extensions": {"com.example/secure-alias": {}}}}}}]`
	h, _, _ := testHost(t, "", mcptest.Options{ToolsJSON: []byte(tools)})
	_, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "needs_alias", json.RawMessage(`{}`))
	var he *Error
	if !errors.As(err, &he) || he.Kind != KindBinding {
		t.Fatalf("err = %v, want a binding error", err)
	}
	if !strings.Contains(he.Message, "com.example/secure-alias") || !strings.Contains(he.Message, "mcpServers.db.secureParams.extensions") {
		t.Errorf("the error does not name the required extension and where to configure it: %s", he.Message)
	}
	if strings.Contains(he.ModelMessage, "secure-alias") {
		t.Errorf("the model is told the operator's detail: %q", he.ModelMessage)
	}
}

// SEP-3221 answers a call of a tool the server does not know with -32601
// and HTTP 404. mcp-go reads any 404 as "session terminated"; the host must
// not drop the connection for every session over it: it refreshes the list
// (and retries once), and the connection stays up.
func TestUnknownToolWith404KeepsTheConnection(t *testing.T) {
	tools := `[{"name": "gone", "inputSchema": {"type": "object"}, "x-test": {"errorCode": -32601, "errorMessage": "Unknown tool"}},
	           {"name": "echo", "inputSchema": {"type": "object"}}]`
	h, srv, _ := testHost(t, "2026-07-28", mcptest.Options{ToolsJSON: []byte(tools), ErrorStatus: mcptest.ErrorStatusSEP})
	s := h.NewSession(SessionOptions{})
	_, err := s.CallTool(context.Background(), "db", "gone", json.RawMessage(`{}`))
	if err == nil || KindOf(err) == KindUnavailable || strings.Contains(err.Error(), "connection lost") {
		t.Fatalf("err = %v (kind %s): a -32601 with 404 dropped the connection", err, KindOf(err))
	}
	if snap := h.Server("db"); snap.Status != StatusConnected {
		t.Fatalf("server is %s after an unknown-tool answer: %s", snap.Status, snap.Error)
	}
	lists := len(srv.Recording().Messages("tools/list"))
	if _, err := s.CallTool(context.Background(), "db", "echo", json.RawMessage(`{}`)); err != nil {
		t.Fatalf("the next call failed: %v", err)
	}
	if lists < 2 {
		t.Errorf("the list was not refreshed after the unknown-tool answer (%d listings)", lists)
	}
}
