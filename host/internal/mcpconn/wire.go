package mcpconn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The wire seam. mcp-go decodes tools/list results into mcp.Tool, which drops
// secureInputSchema and every annotation field it does not model, and it has
// no way to add secureArguments to tools/call params. wireTransport wraps the
// real transport (mcp-go's transport.Interface: it sees every JSON-RPC
// request before it is sent and every response, its result still raw). It
// keeps the raw tools/list pages the connection asks for and hands mcp-go
// an empty page instead (decoding thousands of definitions the host parses
// anyway was most of a listing's cost), adds secureArguments (and their
// x-mcp-header headers) to the outgoing tools/call of exactly one call,
// mirrors x-mcp-header annotated arguments into Mcp-Param-* headers as
// mcp-go would have from its own copy of the definitions (paramheaders.go),
// and returns the raw JSON-RPC error of a call (as an *RPCError), whose
// data mcp-go would lose.
//
// A request that needs the seam is an exchange: the connection makes one
// for the request and puts it in the request's context (exchange.bind).
// mcp-go hands the transport that context with every round of the request
// (a multi-round-trip call is sent again under it), so the secure values go
// with each round, as SEP-3221 requires, and with no other request: an
// exchange applies only to requests of its method, the contexts mcp-go
// gives the server's input requests carry none (exchangeFree), and nothing
// of it is sent.

// exchange is what one request of the host's needs from the seam. Its
// fields are set by the connection before the request; result is set by
// the seam, in the request's goroutine (mcp-go calls the transport in the
// caller's), and read by the connection once the request has returned.
type exchange struct {
	// method is the request's: the exchange applies to no other.
	method string
	// secure are the call's secureArguments (nil: none); read-only.
	secure *SecureArgs
	// headerTool is the call's listed definition when arguments of it
	// travel in Mcp-Param-* headers too (nil: none).
	headerTool *mcp.Tool
	// tasks: the tools/call may be answered with a task handle, which
	// the seam keeps in result (task.go).
	tasks bool
	// task is the request to send in place of mcp-go's tasks/get.
	task *taskRequest
	// result is the raw result of a tools/list or a task request, or the
	// task handle a tools/call was answered with.
	result json.RawMessage
}

type exchangeKey struct{}

// bind returns ctx carrying x, for the request x is for.
func (x *exchange) bind(ctx context.Context) context.Context {
	return context.WithValue(ctx, exchangeKey{}, x)
}

// exchangeFor is the exchange in ctx if it is for method, or nil.
func exchangeFor(ctx context.Context, method string) *exchange {
	if x, _ := ctx.Value(exchangeKey{}).(*exchange); x != nil && x.method == method {
		return x
	}
	return nil
}

// exchangeFree returns ctx without an exchange: for work a request's
// context is handed on to (the host's answers to a server's input
// requests), whose own requests must not take the exchange up.
func exchangeFree(ctx context.Context) context.Context {
	if ctx.Value(exchangeKey{}) == nil {
		return ctx
	}
	return context.WithValue(ctx, exchangeKey{}, (*exchange)(nil))
}

// exchangeFreeElicitation is the host's elicitation handler as mcp-go gets
// it: mcp-go answers a call's input requests (SEP-2322) under a context of
// the call's, which must not carry the call's exchange to the handler.
type exchangeFreeElicitation struct{ client.ElicitationHandler }

func (e exchangeFreeElicitation) Elicit(ctx context.Context, request mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return e.ElicitationHandler.Elicit(exchangeFree(ctx), request)
}

// emptyToolsPage is what mcp-go decodes instead of a page the host reads
// raw. The cursor is the host's business too: it reads it from the raw page.
var emptyToolsPage = json.RawMessage(`{"tools":[]}`)

// SecureArgs are the secureArguments of calls to one tool, prepared once
// (validated, encoded): read-only, so one may go with many calls.
type SecureArgs struct {
	tool       string
	quotedTool json.RawMessage   // tool, JSON-encoded
	encoded    json.RawMessage   // the values, encoded once for every round
	headers    map[string]string // header name -> encoded value
	names      []string          // the values' names, sorted
}

// NewSecureArgs prepares the secure values of calls to tool, and the
// x-mcp-header headers that carry some of them. An empty values still
// sends an empty secureArguments object.
func NewSecureArgs(tool string, values map[string]any, headers map[string]string) (*SecureArgs, error) {
	encoded, err := json.Marshal(values)
	if err != nil {
		// The encoder's message may quote a value: say nothing of it.
		return nil, errors.New("secure values cannot be encoded as JSON")
	}
	if values == nil {
		encoded = json.RawMessage("{}")
	}
	quoted, _ := json.Marshal(tool) // a string always encodes
	return &SecureArgs{tool: tool, quotedTool: quoted, encoded: encoded, headers: headers,
		names: slices.Sorted(maps.Keys(values))}, nil
}

// Names are the secure parameter names sent, sorted (never values); a copy
// the caller owns. It ends in CallResult.SecureParams, which a library
// caller may change: shared, that would change what later calls report
// and audit.
func (s *SecureArgs) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// wireTransport is the seam around a real mcp-go transport.
type wireTransport struct {
	inner transport.Interface
	// mirrorParams is set on HTTP connections in the 2026-07-28 era, the
	// only ones on which mcp-go mirrors x-mcp-header arguments.
	mirrorParams atomic.Bool
	// http: the inner transport sends request headers at all.
	http bool
	// pending are the requests in flight, for protocol failures that
	// the inner transport's reader reports (see stdioRPC, eventGuard);
	// nil for a transport with no such reader (one handed in by the
	// embedding program), whose requests are not tracked.
	pending *pendingRequests
	// requests bounds the server's requests to the host (serverreq.go);
	// nil: unbounded (tests).
	requests *serverRequests
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

// newWire wraps inner: seam is what mcp-go gets (HTTP-typed exactly when
// inner is), w its core.
func newWire(inner transport.Interface, pending *pendingRequests, requests *serverRequests) (seam transport.Interface, w *wireTransport) {
	w = &wireTransport{inner: inner, pending: pending, requests: requests}
	if hc, ok := inner.(transport.HTTPConnection); ok {
		w.http = true
		return &httpWireTransport{wireTransport: w, http: hc}, w
	}
	return w, w
}

func (w *wireTransport) Start(ctx context.Context) error { return w.inner.Start(ctx) }
func (w *wireTransport) Close() error                    { return w.inner.Close() }

//lint:ignore ST1003 the name is mcp-go's transport.Interface method
func (w *wireTransport) GetSessionId() string { return w.inner.GetSessionId() }

func (w *wireTransport) SendNotification(ctx context.Context, n mcp.JSONRPCNotification) error {
	return w.inner.SendNotification(ctx, n)
}

func (w *wireTransport) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	w.inner.SetNotificationHandler(handler)
}

// SetRequestHandler forwards server-to-client requests (elicitation, sampling,
// roots) when the inner transport can carry them, bounded (serverreq.go);
// SSE cannot, and then the handler is simply never called.
func (w *wireTransport) SetRequestHandler(handler transport.RequestHandler) {
	if bi, ok := w.inner.(transport.BidirectionalInterface); ok {
		if w.requests != nil && handler != nil {
			handler = w.requests.wrap(handler, w.http)
		}
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

// RequiresLegacyProtocol forwards the inner transport's constraint, except
// a streamable HTTP transport's: the host turns on its GET stream for
// servers of the 2025-11-25 era, and mcp-go leaves the stream closed on
// modern connections (see legacyhttp.go).
func (w *wireTransport) RequiresLegacyProtocol() bool {
	if _, ok := w.inner.(*transport.StreamableHTTP); ok {
		return false
	}
	type legacy interface{ RequiresLegacyProtocol() bool }
	l, ok := w.inner.(legacy)
	return ok && l.RequiresLegacyProtocol()
}

func (w *wireTransport) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	x := exchangeFor(ctx, request.Method)
	if request.Method == string(mcp.MethodToolsCall) {
		if w.requests != nil {
			var call *callServerRequests
			ctx, call = w.requests.withCall(ctx)
			defer w.requests.endCall(call)
		}
		if x != nil && x.headerTool != nil && w.mirrorParams.Load() {
			request = withParamHeaders(request, x.headerTool)
		}
		if x != nil && x.secure != nil {
			augmented, attached, err := attachSecureArguments(request, x.secure)
			if err != nil {
				return nil, err
			}
			// Headers exist only on HTTP, and the x-mcp-header rules only
			// in the 2026-07-28 era.
			if attached && w.http && w.mirrorParams.Load() {
				augmented = withSecureHeaders(augmented, x.secure)
			}
			request = augmented
		}
	}

	if x != nil && x.task != nil {
		rewritten, err := withTaskRequest(request, x.task, w.http && w.mirrorParams.Load())
		if err != nil {
			return nil, err
		}
		request = rewritten
	}
	if request.Method == string(mcp.MethodServerDiscover) {
		ctx = context.WithValue(ctx, discoverProbeKey{}, true)
	}
	// mcp-go drops a message it cannot parse, and the request it answered
	// would wait for its timeout: the guards fail it through its context.
	if w.pending != nil {
		var (
			id     uint64
			cancel context.CancelCauseFunc
		)
		ctx, id, cancel = w.pending.track(ctx, w.http)
		defer w.pending.done(id, cancel)
	}
	response, err := w.inner.SendRequest(ctx, request)
	if err == nil && request.Method == string(mcp.MethodServerDiscover) && rejectsOwnVersion(request.Params, response) {
		// The server refused the version it names as supported: mcp-go
		// retries only at a different version, and would fall back to
		// the initialize handshake, which such a server does not speak.
		// The probe is sent once more, as it was (SEP-2575).
		response, err = w.inner.SendRequest(ctx, request)
	}
	if err != nil {
		if perr := protocolCause(ctx); perr != nil {
			return nil, perr
		}
		return nil, err
	}

	switch request.Method {
	case string(mcp.MethodServerDiscover):
		// Over HTTP the client checked a JSON answer already; this is
		// for the other transports and event-stream answers.
		if response.Error == nil && !discoverIsModern(response.Result) {
			return notDiscovered(response), nil
		}
	case string(mcp.MethodToolsList):
		if x != nil && response.Error == nil {
			// The host parses the page itself; mcp-go gets an empty one,
			// so it neither decodes the definitions nor keeps them.
			x.result = response.Result
			stripped := *response
			stripped.Result = emptyToolsPage
			return &stripped, nil
		}
	case string(mcp.MethodToolsCall):
		if response.Error != nil {
			// mcp-go would keep the code and message only.
			return nil, newRPCError(response.Error)
		}
		if x != nil && x.tasks && isTaskHandle(response.Result) {
			x.result = response.Result
			stub := *response
			stub.Result = taskStubResult
			return &stub, nil
		}
	case methodTasksGet, methodTasksUpdate, methodTasksCancel:
		if x != nil && x.task != nil {
			if response.Error != nil {
				return nil, newRPCError(response.Error)
			}
			x.result = response.Result
		}
	}
	return response, nil
}

// rejectsOwnVersion reports whether a response to a request is an
// UnsupportedProtocolVersion error (-32022) whose supported versions include
// the one the request declared in its _meta.
func rejectsOwnVersion(params any, response *transport.JSONRPCResponse) bool {
	if response == nil || response.Error == nil || response.Error.Code != mcp.UNSUPPORTED_PROTOCOL_VERSION {
		return false
	}
	fields, ok := params.(map[string]json.RawMessage)
	if !ok {
		return false
	}
	var meta map[string]json.RawMessage
	var declared string
	if json.Unmarshal(fields["_meta"], &meta) != nil || json.Unmarshal(meta[mcp.MetaKeyProtocolVersion], &declared) != nil || declared == "" {
		return false
	}
	var data mcp.UnsupportedProtocolVersionData
	encoded, err := json.Marshal(response.Error.Data)
	if err != nil || json.Unmarshal(encoded, &data) != nil {
		return false
	}
	return slices.Contains(data.Supported, declared)
}

// withTaskRequest returns a copy of mcp-go's tasks/get request that sends
// task's method and params instead, beside the _meta mcp-go added; on
// 2026-07-28 HTTP (headers) with Mcp-Method and Mcp-Name (the task id)
// set as the extension requires.
func withTaskRequest(request transport.JSONRPCRequest, task *taskRequest, headers bool) (transport.JSONRPCRequest, error) {
	encoded, err := json.Marshal(request.Params)
	if err != nil {
		return request, fmt.Errorf("%s params: %w", task.method, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(encoded, &fields); err != nil || fields == nil {
		fields = map[string]json.RawMessage{}
	}
	params := make(map[string]json.RawMessage, len(task.params)+1)
	if meta, ok := fields["_meta"]; ok {
		params["_meta"] = meta
	}
	for k, v := range task.params {
		b, err := json.Marshal(v)
		if err != nil {
			return request, fmt.Errorf("%s params: %w", task.method, err)
		}
		params[k] = b
	}
	request.Method = task.method
	request.Params = params
	if headers {
		h := request.Header.Clone()
		if h == nil {
			h = http.Header{}
		}
		h.Set(mcp.HeaderMethod, task.method)
		if id, ok := task.params["taskId"].(string); ok {
			if v, ok := mcp.EncodeHeaderValue(id); ok {
				h.Set(mcp.HeaderName, v)
			}
		}
		request.Header = h
	}
	return request, nil
}

// attachSecureArguments returns a copy of a tools/call request whose params
// carry the call's secureArguments. The request's params are never mutated:
// mcp-go reuses them (and their _meta) across retries. The params are
// encoded once and the secure object spliced in, so the transport sends the
// bytes as they are.
func attachSecureArguments(request transport.JSONRPCRequest, call *SecureArgs) (transport.JSONRPCRequest, bool, error) {
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
func (s *SecureArgs) isFor(params any) bool {
	if fields, ok := params.(map[string]json.RawMessage); ok && bytes.Equal(fields["name"], s.quotedTool) {
		return true
	}
	return callName(params) == s.tool
}

// withSecureHeaders adds the x-mcp-header headers of secure values (on a
// copy of the request's headers).
func withSecureHeaders(request transport.JSONRPCRequest, call *SecureArgs) transport.JSONRPCRequest {
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
