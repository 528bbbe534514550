package host

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The wire seam. mcp-go decodes tools/list results into mcp.Tool, which drops
// secureInputSchema and every annotation field it does not model, and it has
// no way to add secureArguments to tools/call params. wireTransport wraps the
// real transport: it takes every tools/list page the host asks for raw and
// hands mcp-go an empty page instead (decoding thousands of definitions the
// host parses anyway was most of a listing's cost), mirrors x-mcp-header
// annotated arguments into Mcp-Param-* headers as mcp-go would have from
// its own copy of the definitions, adds secureArguments (and their
// x-mcp-header headers) to the outgoing tools/call of exactly one tool, and
// keeps the raw JSON-RPC error of a call, whose data mcp-go would lose.
//
// The values travel in the request context, so they are attached to every
// round of a multi-round-trip call (mcp-go reuses the caller's context for
// retries), and never to any other request.

type listPagesKey struct{}

// rawPages collects the raw results of tools/list responses sent under one
// context.
type rawPages struct {
	mu    sync.Mutex
	pages []json.RawMessage
}

// add keeps a page. The transport decoded the response into a fresh
// buffer, and mcp-go never sees it (it gets emptyToolsPage), so the bytes
// are kept without a copy.
func (p *rawPages) add(result json.RawMessage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages = append(p.pages, result)
}

// emptyToolsPage is what mcp-go decodes instead of a page the host reads
// raw. The cursor is the host's business too: it reads it from the raw page.
var emptyToolsPage = json.RawMessage(`{"tools":[]}`)

func (p *rawPages) last() json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pages) == 0 {
		return nil
	}
	return p.pages[len(p.pages)-1]
}

func withRawPages(ctx context.Context, p *rawPages) context.Context {
	return context.WithValue(ctx, listPagesKey{}, p)
}

type secureCallKey struct{}

// secureCall is what one tools/call needs from the wire seam. tool binds the
// values to one tool name so that no other request can carry them.
type secureCall struct {
	tool    string
	values  map[string]any    // secureArguments; nil means send none
	encoded json.RawMessage   // values, encoded once for every round
	headers map[string]string // header name -> encoded value
	// sortedNames are the keys of values, sorted; shared read-only
	sortedNames []string
	quotedTool  json.RawMessage // tool, JSON-encoded

	mu       sync.Mutex
	rawError *mcp.JSONRPCErrorDetails
	rounds   int
}

func (s *secureCall) noteRound(errDetails *mcp.JSONRPCErrorDetails) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rounds++
	if errDetails != nil {
		copied := *errDetails
		s.rawError = &copied
	}
}

// reset forgets the previous attempt's error.
func (s *secureCall) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rawError = nil
}

// carriesSecure reports whether the call sends secureArguments.
func (s *secureCall) carriesSecure() bool { return s.values != nil }

// names are the secure parameter names sent, sorted (never values); a copy
// the caller owns.
func (s *secureCall) names() []string {
	return slices.Clone(s.sortedNames)
}

// fresh is a call that shares s's read-only values, encoding and headers,
// with its own round state.
func (s *secureCall) fresh() *secureCall {
	return &secureCall{tool: s.tool, values: s.values, encoded: s.encoded, headers: s.headers, sortedNames: s.sortedNames, quotedTool: s.quotedTool}
}

// lastError is the raw JSON-RPC error of the most recent round, if any.
func (s *secureCall) lastError() *mcp.JSONRPCErrorDetails {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rawError
}

func withSecureCall(ctx context.Context, s *secureCall) context.Context {
	return context.WithValue(ctx, secureCallKey{}, s)
}

// wireTransport is the seam around a real mcp-go transport.
type wireTransport struct {
	inner transport.Interface
	// headers finds the listed definitions whose inputSchema routes
	// arguments to Mcp-Param-* headers; nil mirrors nothing.
	headers paramHeaderSource
	// mirrorParams is set on HTTP connections in the 2026-07-28 era, the
	// only ones on which mcp-go mirrors x-mcp-header arguments.
	mirrorParams atomic.Bool
	// http: the inner transport sends request headers at all.
	http bool
	// pending are the requests in flight, for protocol failures that
	// the inner transport's reader reports (see lineGuard, eventGuard).
	pending *pendingRequests
}

// httpWireTransport is the seam around an HTTP transport. mcp-go checks
// whether a transport is an HTTPConnection to decide on cancellation and
// protocol headers, so the wrapper must be one exactly when the inner
// transport is.
type httpWireTransport struct {
	*wireTransport
	http transport.HTTPConnection
}

func (h *httpWireTransport) SetProtocolVersion(version string) {
	h.mirrorParams.Store(mcp.IsModernProtocol(version))
	h.http.SetProtocolVersion(version)
}

func newWireTransport(inner transport.Interface, headers paramHeaderSource, pending *pendingRequests) transport.Interface {
	if pending == nil {
		pending = &pendingRequests{}
	}
	w := &wireTransport{inner: inner, headers: headers, pending: pending}
	if hc, ok := inner.(transport.HTTPConnection); ok {
		w.http = true
		return &httpWireTransport{wireTransport: w, http: hc}
	}
	return w
}

func (w *wireTransport) Start(ctx context.Context) error { return w.inner.Start(ctx) }
func (w *wireTransport) Close() error                    { return w.inner.Close() }
func (w *wireTransport) GetSessionId() string            { return w.inner.GetSessionId() }

func (w *wireTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return w.inner.SendNotification(ctx, n)
}

func (w *wireTransport) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	w.inner.SetNotificationHandler(handler)
}

// SetRequestHandler forwards server-to-client requests (elicitation, sampling,
// roots) when the inner transport can carry them; SSE cannot, and then the
// handler is simply never called.
func (w *wireTransport) SetRequestHandler(handler transport.RequestHandler) {
	if bi, ok := w.inner.(transport.BidirectionalInterface); ok {
		bi.SetRequestHandler(handler)
	}
}

// SetConnectionLostHandler forwards to transports that report lost
// connections.
func (w *wireTransport) SetConnectionLostHandler(handler func(error)) {
	type setter interface{ SetConnectionLostHandler(func(error)) }
	if s, ok := w.inner.(setter); ok {
		s.SetConnectionLostHandler(handler)
	}
}

// RequiresLegacyProtocol forwards the inner transport's constraint.
func (w *wireTransport) RequiresLegacyProtocol() bool {
	type legacy interface{ RequiresLegacyProtocol() bool }
	l, ok := w.inner.(legacy)
	return ok && l.RequiresLegacyProtocol()
}

func (w *wireTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	var call *secureCall
	if request.Method == string(mcp.MethodToolsCall) {
		if w.mirrorParams.Load() && w.headers != nil && w.headers.hasInputHeaders() {
			request = withParamHeaders(request, w.headers)
		}
		call, _ = ctx.Value(secureCallKey{}).(*secureCall)
		if call != nil && call.carriesSecure() {
			augmented, attached, err := attachSecureArguments(request, call)
			if err != nil {
				return nil, err
			}
			// Headers exist only on HTTP, and the x-mcp-header rules only
			// in the 2026-07-28 era.
			if attached && w.http && w.mirrorParams.Load() {
				augmented = withSecureHeaders(augmented, call)
			}
			request = augmented
		}
	}

	// mcp-go drops a message it cannot parse, and the request it answered
	// would wait for its timeout: the guards fail it through its context.
	ctx, id, cancel := w.pending.track(ctx, w.http)
	defer w.pending.done(id, cancel)
	response, err := w.inner.SendRequest(ctx, request)
	if err != nil {
		if perr := protocolCause(ctx); perr != nil {
			return nil, perr
		}
		return nil, err
	}

	switch request.Method {
	case string(mcp.MethodToolsList):
		if pages, ok := ctx.Value(listPagesKey{}).(*rawPages); ok && response.Error == nil {
			// The host parses the page itself; mcp-go gets an empty one,
			// so it neither decodes the definitions nor keeps them.
			pages.add(response.Result)
			stripped := *response
			stripped.Result = emptyToolsPage
			return &stripped, nil
		}
	case string(mcp.MethodToolsCall):
		if call != nil {
			call.noteRound(response.Error)
		}
	}
	return response, nil
}

// attachSecureArguments returns a copy of a tools/call request whose params
// carry the call's secureArguments. The request's params are never mutated:
// mcp-go reuses them (and their _meta) across retries. The params are
// encoded once and the secure object spliced in, so the transport sends the
// bytes as they are.
func attachSecureArguments(request transport.JSONRPCRequest, call *secureCall) (transport.JSONRPCRequest, bool, error) {
	if !call.isFor(request.Params) {
		// Bound to another tool: never send these values elsewhere.
		return request, false, nil
	}
	if fields, ok := request.Params.(map[string]json.RawMessage); ok {
		// 2026-07-28: mcp-go has already turned the params into a field
		// map (to add _meta); a copy with one more field is enough.
		params := make(map[string]json.RawMessage, len(fields)+1)
		for k, v := range fields {
			params[k] = v
		}
		params["secureArguments"] = call.encoded
		request.Params = params
		return request, true, nil
	}
	encoded, err := json.Marshal(request.Params)
	if err != nil {
		return request, false, fmt.Errorf("encode tools/call params: %w", err)
	}
	encoded = bytes.TrimSpace(encoded)
	if len(encoded) < 2 || encoded[0] != '{' || encoded[len(encoded)-1] != '}' {
		return request, false, errors.New("tools/call params are not an object")
	}
	params := make([]byte, 0, len(encoded)+len(call.encoded)+22)
	params = append(params, encoded[:len(encoded)-1]...)
	if len(bytes.TrimSpace(encoded[1:len(encoded)-1])) > 0 {
		params = append(params, ',')
	}
	params = append(params, `"secureArguments":`...)
	params = append(params, call.encoded...)
	params = append(params, '}')
	request.Params = json.RawMessage(params)
	return request, true, nil
}

// isFor reports whether tools/call params name the call's tool. mcp-go
// encodes the name of a 2026-07-28 field map with encoding/json, as the
// host encoded quotedTool: equal bytes settle it without decoding.
func (s *secureCall) isFor(params any) bool {
	if fields, ok := params.(map[string]json.RawMessage); ok && s.quotedTool != nil && bytes.Equal(fields["name"], s.quotedTool) {
		return true
	}
	return callName(params) == s.tool
}

// withSecureHeaders adds the x-mcp-header headers of secure values (on a
// copy of the request's headers).
func withSecureHeaders(request transport.JSONRPCRequest, call *secureCall) transport.JSONRPCRequest {
	if len(call.headers) == 0 {
		return request
	}
	header := http.Header{}
	if request.Header != nil {
		header = request.Header.Clone()
	}
	for name, value := range call.headers {
		header.Set(name, value)
	}
	request.Header = header
	return request
}

// callName is the tool name of tools/call params in the shapes mcp-go
// sends: the typed params (legacy) or a field map (2026-07-28, after it
// adds _meta).
func callName(params any) string {
	switch p := params.(type) {
	case mcp.CallToolParams:
		return p.Name
	case *mcp.CallToolParams:
		return p.Name
	case map[string]json.RawMessage:
		var name string
		_ = json.Unmarshal(p["name"], &name)
		return name
	default:
		encoded, err := json.Marshal(params)
		if err != nil {
			return ""
		}
		var v struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(encoded, &v)
		return v.Name
	}
}
