package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The demo's MCP server is mcp-go's own server, served over streamable HTTP
// on loopback, behind a small edge that adds what mcp-go's server does not
// know of SEP-3221 (secure parameters):
//
//   - tools/list: mcp-go's Tool type cannot carry secureInputSchema (nor
//     SEP-2793 risk annotations), so the edge overlays each listed tool
//     with its definition from toolsJSON;
//   - tools/call: mcp-go's request type has no secureArguments, so the edge
//     reads them from the request body, applies the server-side rules (no
//     secure name in arguments, every required secure value present, only
//     declared names, string values), and hands them to the tool handler
//     in the request's context. A call the edge refuses never reaches a
//     handler.
//
// Only what the demo's tools need is implemented: their secure parameters
// are flat string properties.

// secureParamsExtension is the SEP-3221 extension the server advertises.
const secureParamsExtension = "io.modelcontextprotocol/secure-params"

// maxRequestBody bounds what the edge reads of one request.
const maxRequestBody = 1 << 20

// demoTool is one tool's definition as listed and what the edge checks of
// its secure parameters.
type demoTool struct {
	raw            map[string]json.RawMessage // the definition, verbatim
	index          int                        // its place in toolsJSON
	secure         map[string]bool            // declared secure property names
	secureRequired []string
}

// parseTools reads toolsJSON.
func parseTools(doc string) (map[string]*demoTool, []string, error) {
	var defs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &defs); err != nil {
		return nil, nil, fmt.Errorf("demo tools: %w", err)
	}
	tools := map[string]*demoTool{}
	var order []string
	for _, def := range defs {
		var name string
		if err := json.Unmarshal(def["name"], &name); err != nil || name == "" {
			return nil, nil, errors.New("demo tools: a tool without a name")
		}
		var secure struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		}
		if raw, ok := def["secureInputSchema"]; ok {
			if err := json.Unmarshal(raw, &secure); err != nil {
				return nil, nil, fmt.Errorf("demo tools: %s: secureInputSchema: %w", name, err)
			}
		}
		t := &demoTool{raw: def, index: len(order), secure: map[string]bool{}, secureRequired: secure.Required}
		for p := range secure.Properties {
			t.secure[p] = true
		}
		tools[name] = t
		order = append(order, name)
	}
	return tools, order, nil
}

// secureArgsKey carries a checked call's secureArguments in its context.
type secureArgsKey struct{}

// rpcError is a JSON-RPC error the edge answers itself.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

const (
	codeInvalidParams = -32602
	codeInternal      = -32603
)

// checkCall applies SEP-3221's server-side rules to tools/call params and
// returns the secure values. Messages name parameters, never values.
func checkCall(tools map[string]*demoTool, params json.RawMessage) (map[string]string, *rpcError) {
	var p struct {
		Name            string                     `json:"name"`
		Arguments       map[string]json.RawMessage `json:"arguments"`
		SecureArguments map[string]json.RawMessage `json:"secureArguments"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &rpcError{codeInvalidParams, "tools/call params are not an object with arguments and secureArguments objects"}
	}
	t, ok := tools[p.Name]
	if !ok {
		return nil, nil // mcp-go answers for tools it does not have
	}
	for name := range p.Arguments {
		for s := range t.secure {
			if strings.EqualFold(name, s) {
				return nil, &rpcError{codeInvalidParams, fmt.Sprintf("parameter %q is secure and must not be passed in arguments", name)}
			}
		}
	}
	for _, name := range t.secureRequired {
		if _, ok := p.SecureArguments[name]; !ok {
			return nil, &rpcError{codeInvalidParams, fmt.Sprintf("missing required secure parameter %q in secureArguments", name)}
		}
	}
	values := make(map[string]string, len(p.SecureArguments))
	for name, raw := range p.SecureArguments {
		if !t.secure[name] {
			return nil, &rpcError{codeInvalidParams, fmt.Sprintf("unknown secure parameter %q in secureArguments", name)}
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, &rpcError{codeInvalidParams, fmt.Sprintf("secure parameter %q must be of type string", name)}
		}
		values[name] = v
	}
	return values, nil
}

// secureEdge is the HTTP handler in front of mcp-go's streamable server.
type secureEdge struct {
	next  http.Handler
	tools map[string]*demoTool
}

func (e *secureEdge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		e.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		http.Error(w, "request body unreadable or too large", http.StatusRequestEntityTooLarge)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	// Anything that is not one request object (a batch, a response, junk)
	// goes on as it came: mcp-go answers it, and a tools/call that reaches a
	// handler without checked secure values fails closed there.
	_ = json.Unmarshal(body, &msg)
	switch msg.Method {
	case "tools/list":
		e.serveToolsList(w, r, msg.ID)
	case "tools/call":
		values, rerr := checkCall(e.tools, msg.Params)
		if rerr != nil {
			writeRPCError(w, msg.ID, rerr)
			return
		}
		e.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), secureArgsKey{}, values)))
	default:
		e.next.ServeHTTP(w, r)
	}
}

// serveToolsList lets mcp-go answer into a buffer (a writer that cannot
// flush, so the answer is one JSON object, never an event stream) and
// overlays each listed tool with its full definition.
func (e *secureEdge) serveToolsList(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	buf := &bufferedResponse{header: http.Header{}, status: http.StatusOK}
	e.next.ServeHTTP(buf, r)
	body := buf.body.Bytes()
	if buf.status == http.StatusOK {
		out, err := overlayTools(body, e.tools)
		if err != nil {
			writeRPCError(w, id, &rpcError{codeInternal, "tools/list: " + err.Error()})
			return
		}
		body = out
	}
	for k, v := range buf.header {
		if k != "Content-Length" {
			w.Header()[k] = v
		}
	}
	w.WriteHeader(buf.status)
	_, _ = w.Write(body)
}

// overlayTools rewrites a tools/list response: every field of a tool's
// definition replaces mcp-go's rendering of it, and the tools are listed in
// toolsJSON's order (mcp-go sorts them by name). A JSON-RPC error passes
// through.
func overlayTools(body []byte, tools map[string]*demoTool) ([]byte, error) {
	var resp map[string]json.RawMessage
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("the response is not a JSON object: %w", err)
	}
	raw, ok := resp["result"]
	if !ok {
		return body, nil
	}
	var result map[string]json.RawMessage
	if err := json.Unmarshal(raw, &result); err != nil {
		return nil, fmt.Errorf("result: %w", err)
	}
	var listed []map[string]json.RawMessage
	if err := json.Unmarshal(result["tools"], &listed); err != nil {
		return nil, fmt.Errorf("result.tools: %w", err)
	}
	toolOf := func(entry map[string]json.RawMessage) *demoTool {
		var name string
		_ = json.Unmarshal(entry["name"], &name)
		return tools[name]
	}
	place := func(entry map[string]json.RawMessage) int {
		if t := toolOf(entry); t != nil {
			return t.index
		}
		return len(tools) // a tool the demo does not define: last
	}
	for _, entry := range listed {
		if t := toolOf(entry); t != nil {
			for k, v := range t.raw {
				entry[k] = v
			}
		}
	}
	sort.SliceStable(listed, func(i, j int) bool { return place(listed[i]) < place(listed[j]) })
	var err error
	if result["tools"], err = json.Marshal(listed); err != nil {
		return nil, err
	}
	if resp["result"], err = json.Marshal(result); err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

func writeRPCError(w http.ResponseWriter, id json.RawMessage, e *rpcError) {
	if len(bytes.TrimSpace(id)) == 0 {
		id = json.RawMessage("null")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *rpcError       `json:"error"`
	}{"2.0", id, e})
}

// bufferedResponse is an http.ResponseWriter that keeps the response. It
// is not an http.Flusher, so mcp-go answers with one JSON object.
type bufferedResponse struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header { return b.header }

func (b *bufferedResponse) WriteHeader(status int) {
	if !b.wrote {
		b.status, b.wrote = status, true
	}
}

func (b *bufferedResponse) Write(p []byte) (int, error) {
	b.wrote = true
	return b.body.Write(p)
}

// newMCPHandler builds the demo's MCP server for sqls: mcp-go's server with
// the demo's tools, behind the secure-params edge.
func newMCPHandler(sqls *sqlServer) (http.Handler, error) {
	tools, order, err := parseTools(toolsJSON)
	if err != nil {
		return nil, err
	}
	s := server.NewMCPServer("demo-sql", "1.0.0",
		server.WithToolCapabilities(false),
		server.WithExtensions(map[string]any{secureParamsExtension: map[string]any{}}),
	)
	for _, name := range order {
		t := tools[name]
		var description string
		_ = json.Unmarshal(t.raw["description"], &description)
		s.AddTool(mcp.Tool{Name: name, Description: description, RawInputSchema: t.raw["inputSchema"]},
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				secure, _ := ctx.Value(secureArgsKey{}).(map[string]string)
				text, isErr := sqls.handle(name, req.GetArguments(), secure)
				if isErr {
					return mcp.NewToolResultError(text), nil
				}
				return mcp.NewToolResultText(text), nil
			})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", &secureEdge{next: server.NewStreamableHTTPServer(s), tools: tools})
	return mux, nil
}

// startServer serves the SQL tools over streamable HTTP on loopback; it
// returns the endpoint URL and a function that stops the server and waits
// for it.
func startServer(sqls *sqlServer) (string, func(), error) {
	handler, err := newMCPHandler(sqls)
	if err != nil {
		return "", nil, fmt.Errorf("demo server: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo server: %w", err)
	}
	hs := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln) // returns http.ErrServerClosed after Close
	}()
	stop := func() {
		_ = hs.Close() // also ends open event streams
		<-done
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}
