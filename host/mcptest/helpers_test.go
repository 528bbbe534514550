package mcptest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Canary secure values: they must never show up where values are not due.
const (
	canaryProject  = "canary-project-7f3a"
	canaryInstance = "canary-instance-91bc"
	canaryToken    = "canary-token-d00d"
)

// testTools is the default tool set of these tests.
const testTools = `{"tools": [
 {"name": "execute_sql", "description": "Executes SQL.",
  "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
  "secureInputSchema": {"type": "object", "properties": {
     "project_id": {"type": "string"}, "instance": {"type": "string"}, "session_token": {"type": "string"}},
     "required": ["project_id", "instance"]}},
 {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
 {"name": "bound", "inputSchema": {"type": "object"}, "secureInputSchema": {"type": "object", "properties": {}, "required": []}},
 {"name": "typed", "inputSchema": {"type": "object"}, "secureInputSchema": {"type": "object", "properties": {
     "count": {"type": "integer"}, "flag": {"type": "boolean"}, "label": {"type": ["string", "null"]}}, "additionalProperties": false}},
 {"name": "routed", "inputSchema": {"type": "object"}, "secureInputSchema": {"type": "object", "properties": {
     "region": {"type": "string", "x-mcp-header": "Region"}}, "required": ["region"]}},
 {"name": "confirm2", "inputSchema": {"type": "object"}, "x-test": {"inputRequired": 2}},
 {"name": "confirm_secure", "inputSchema": {"type": "object"},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "x-test": {"inputRequired": 1}},
 {"name": "echo_secure", "inputSchema": {"type": "object"},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "x-test": {"echoSecure": true}},
 {"id": "fixture_entry", "expect": "accept", "tool": {"name": "from_fixture", "inputSchema": {"type": "object"}, "x-test": {"text": "fixture ok"}}},
 {"name": "failing", "inputSchema": {"type": "object"}, "x-test": {"isError": true, "text": "boom"}},
 {"name": "structured", "inputSchema": {"type": "object"}, "x-test": {"structured": {"rows": 3}, "text": "three rows"}},
 {"name": "media", "inputSchema": {"type": "object"}, "x-test": {"content": [
     {"type": "image", "data": "aGk=", "mimeType": "image/png"},
     {"type": "resource", "resource": {"uri": "file:///r.txt", "mimeType": "text/plain", "text": "r"}}]}},
 {"name": "err_internal", "inputSchema": {"type": "object"}, "x-test": {"errorCode": -32603, "errorMessage": "db down"}},
 {"name": "err_params", "inputSchema": {"type": "object"}, "x-test": {"errorCode": -32602}},
 {"name": "err_capability", "inputSchema": {"type": "object"}, "x-test": {"errorCode": -32021}},
 {"name": "slow", "inputSchema": {"type": "object"}, "x-test": {"sleep": "300ms"}},
 {"name": "hang", "inputSchema": {"type": "object"}, "x-test": {"hang": true}},
 {"name": "die", "inputSchema": {"type": "object"}, "x-test": {"die": true}},
 {"name": "switch", "inputSchema": {"type": "object"}, "x-test": {"listChanged": "other.json"}}
]}`

const otherTools = `[{"name": "after_switch", "inputSchema": {"type": "object"}}]`

// visibleWithExtension and visibleWithout are the tool names each kind of
// client must see from testTools.
var (
	allTestToolNames = []string{"execute_sql", "echo", "bound", "typed", "routed", "confirm2", "confirm_secure",
		"echo_secure", "from_fixture", "failing", "structured", "media", "err_internal", "err_params",
		"err_capability", "slow", "hang", "die", "switch"}
	toolsWithoutExtension = []string{"echo", "bound", "typed", "confirm2", "from_fixture", "failing", "structured",
		"media", "err_internal", "err_params", "err_capability", "slow", "hang", "die", "switch"}
)

// writeToolFiles writes testTools and otherTools into a temp dir.
func writeToolFiles(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"tools.json": testTools, "other.json": otherTools} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tools.json")
}

func testOptions(t testing.TB) Options {
	return Options{ToolsFile: writeToolFiles(t)}
}

func newServer(t testing.TB, opts Options) *Server {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// stdioPipes runs ServeStdio on in-process pipes. The returned writer feeds
// the server; the reader yields its output. Cleanup closes the input and
// waits for ServeStdio; serveErr reports its result once done.
type stdioPipes struct {
	in       *io.PipeWriter
	out      *io.PipeReader
	done     chan struct{}
	serveErr error
}

func startStdio(t testing.TB, srv *Server) *stdioPipes {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPipes{in: inW, out: outR, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.serveErr = srv.ServeStdio(context.Background(), inR, outW)
		_ = outW.Close()
	}()
	t.Cleanup(func() {
		_ = inW.Close() // EOF: the server finishes and closes its output
		select {
		case <-p.done:
		case <-time.After(2 * time.Second):
			_ = outR.Close() // nobody drained the output; unblock the server
			<-p.done
		}
	})
	return p
}

func (p *stdioPipes) wait(t testing.TB) error {
	t.Helper()
	select {
	case <-p.done:
		return p.serveErr
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return")
		return nil
	}
}

// rawStdio speaks JSON-RPC lines to an in-process stdio server.
type rawStdio struct {
	t     testing.TB
	pipes *stdioPipes
	lines chan []byte
}

func newRawStdio(t testing.TB, srv *Server) *rawStdio {
	p := startStdio(t, srv)
	r := &rawStdio{t: t, pipes: p, lines: make(chan []byte, 64)}
	go func() {
		sc := bufio.NewScanner(p.out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			r.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(r.lines)
	}()
	return r
}

func (r *rawStdio) send(msg any) {
	r.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := r.pipes.in.Write(append(b, '\n')); err != nil {
		r.t.Fatalf("writing to server: %v", err)
	}
}

// next returns the next line the server wrote.
func (r *rawStdio) next() []byte {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("server output closed")
		}
		return line
	case <-time.After(5 * time.Second):
		r.t.Fatal("no output from server")
		return nil
	}
}

// rpc is a raw JSON-RPC peer: stdio lines or HTTP POSTs, in one era.
type rpc interface {
	call(method string, params map[string]any) (Response, int)
}

var rawIDs atomic.Int64

type stdioRPC struct {
	raw    *rawStdio
	modern bool
	exts   []string
}

func (s *stdioRPC) call(method string, params map[string]any) (Response, int) {
	s.raw.t.Helper()
	id := rawIDs.Add(1)
	s.raw.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": withMeta(params, s.modern, s.exts)})
	for {
		var resp Response
		line := s.raw.next()
		if err := json.Unmarshal(line, &resp); err != nil {
			s.raw.t.Fatalf("bad line %s: %v", line, err)
		}
		if string(resp.ID) == fmt.Sprint(id) {
			return resp, 0
		}
	}
}

type httpRPC struct {
	t       testing.TB
	url     string
	modern  bool
	exts    []string
	session string
	header  http.Header
}

func (h *httpRPC) call(method string, params map[string]any) (Response, int) {
	h.t.Helper()
	header := h.header.Clone()
	if header == nil {
		header = http.Header{}
	}
	if h.session != "" {
		header.Set(wire.HeaderSessionID, h.session)
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": rawIDs.Add(1), "method": method, "params": withMeta(params, h.modern, h.exts)}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := PostMessage(ctx, h.url, header, msg)
	if err != nil {
		h.t.Fatalf("POST %s: %v", method, err)
	}
	resp, err := res.Response()
	if err != nil {
		h.t.Fatalf("%s: %v (body %q)", method, err, res.Body)
	}
	if method == "initialize" {
		h.session = res.Header.Get(wire.HeaderSessionID)
	}
	return resp, res.Status
}

func withMeta(params map[string]any, modern bool, exts []string) map[string]any {
	out := map[string]any{}
	for k, v := range params {
		out[k] = v
	}
	if modern {
		out["_meta"] = ModernMeta(exts...)
	}
	return out
}

// newRPC connects a raw peer and, in the legacy era, performs initialize.
func newRPC(t *testing.T, transportName string, modern bool, exts []string, opts Options) (rpc, *Server) {
	t.Helper()
	var peer rpc
	var srv *Server
	if transportName == "http" {
		var url string
		url, srv = StartHTTP(t, opts)
		peer = &httpRPC{t: t, url: url, modern: modern, exts: exts}
	} else {
		srv = newServer(t, opts)
		peer = &stdioRPC{raw: newRawStdio(t, srv), modern: modern, exts: exts}
	}
	if !modern {
		extMap := map[string]any{}
		for _, id := range exts {
			extMap[id] = map[string]any{}
		}
		resp, _ := peer.call("initialize", map[string]any{
			"protocolVersion": "2025-11-25",
			"capabilities":    map[string]any{"extensions": extMap},
			"clientInfo":      map[string]any{"name": "raw", "version": "0"},
		})
		if resp.Error != nil {
			t.Fatalf("initialize: %v", resp.Error)
		}
	}
	return peer, srv
}

// mcpClient connects mcp-go's real client over a transport and initializes.
func mcpClient(t *testing.T, transportName string, srv *Server, url string, legacy bool, exts []string, options ...client.ClientOption) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	var tr transport.Interface
	switch transportName {
	case "http":
		h, err := transport.NewStreamableHTTP(url, quietHTTP)
		if err != nil {
			t.Fatal(err)
		}
		tr = h
	case "inprocess":
		tr = srv.InProcessTransport()
	default:
		p := startStdio(t, srv)
		tr = transport.NewIO(p.out, p.in, nil)
	}
	return connect(t, tr, legacy, exts, options...)
}

func connect(t *testing.T, tr transport.Interface, legacy bool, exts []string, options ...client.ClientOption) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	if legacy {
		options = append(options, client.WithProtocolVersion("2025-11-25"))
	}
	if len(exts) > 0 {
		extMap := map[string]any{}
		for _, id := range exts {
			extMap[id] = map[string]any{}
		}
		options = append(options, client.WithClientCapabilities(mcp.ClientCapabilities{Extensions: extMap}))
	}
	c := client.NewClient(tr, options...)
	// Start's context bounds the transport's background listener, so it must
	// outlive this function; Close ends it.
	if err := c.Start(context.Background()); err != nil {
		t.Fatalf("client start: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ClientInfo: mcp.Implementation{Name: "mcp-go-test", Version: "0"},
	}})
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c, res
}

// mcpSetup starts a server of opts on the transport and connects mcp-go.
func mcpSetup(t *testing.T, transportName string, legacy bool, exts []string, opts Options, options ...client.ClientOption) (*client.Client, *Server) {
	t.Helper()
	var srv *Server
	var url string
	if transportName == "http" {
		url, srv = StartHTTP(t, opts)
	} else {
		srv = newServer(t, opts)
	}
	c, _ := mcpClient(t, transportName, srv, url, legacy, exts, options...)
	return c, srv
}

func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (*mcp.CallToolResult, error) {
	return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
}

func resultText(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// lastSentResult decodes the result of the last sent response to method.
func lastSentResult(t testing.TB, srv *Server, method string) map[string]json.RawMessage {
	t.Helper()
	sent := srv.Recording().Sent(method)
	if len(sent) == 0 {
		t.Fatalf("no %s response sent", method)
	}
	var resp struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := sent[len(sent)-1].Decode(&resp); err != nil {
		t.Fatal(err)
	}
	return resp.Result
}

func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quietHTTP keeps mcp-go's transport from logging expected failures (a dead
// server refusing the closing DELETE) into the test output.
var quietHTTP = transport.WithHTTPLogger(slog.New(slog.DiscardHandler))

func transportStreamable(url string, continuous bool) (*transport.StreamableHTTP, error) {
	options := []transport.StreamableHTTPCOption{quietHTTP}
	if continuous {
		// The legacy standalone GET stream is what these tests exercise.
		//lint:ignore SA1019 the 2025-11-25 era is still supported and tested
		options = append(options, transport.WithContinuousListening())
	}
	return transport.NewStreamableHTTP(url, options...)
}

// subscriberCount peeks at the notification streams currently registered.
func (s *Server) subscriberCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.subs)
}
