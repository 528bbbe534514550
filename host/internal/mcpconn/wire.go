package mcpconn

import (
	"context"
	"encoding/json"
	"sync/atomic"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/httpguard"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/outbound"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/taskwire"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
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
// mcp-go would have from its own copy of the definitions (paramHeaderTool,
// outbound.WithParamHeaders),
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
	// Context is the request's context once bind has made the exchange
	// the request's context itself (nil before): x carries itself, so a
	// request's exchange costs no context of its own.
	context.Context
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
	task *outbound.TaskRequest
	// result is the raw result of a tools/list or a task request, or the
	// task handle a tools/call was answered with.
	result json.RawMessage
}

type exchangeKey struct{}

// bind returns ctx carrying x, for the request x is for: x itself, as
// context.WithValue(ctx, exchangeKey{}, x) would be (the same deadline,
// cancellation and values of ctx, x under exchangeKey), without a context
// of its own. Each exchange is bound once, to one request.
func (x *exchange) bind(ctx context.Context) context.Context {
	x.Context = ctx
	return x
}

// Value is x under exchangeKey and ctx's value under any other key.
func (x *exchange) Value(key any) any {
	if _, ok := key.(exchangeKey); ok {
		return x
	}
	return x.Context.Value(key)
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

// wireTransport is the seam around a real mcp-go transport.
type wireTransport struct {
	inner transport.Interface
	// mirrorParams is set on HTTP connections in the 2026-07-28 era, the
	// only ones on which mcp-go mirrors x-mcp-header arguments.
	mirrorParams atomic.Bool
	// http: the inner transport sends request headers at all.
	http bool
	// pending are the requests in flight, for protocol failures that
	// the inner transport's reader reports (see stdiorpc, httpguard);
	// nil for a transport with no such reader (one handed in by the
	// embedding program), whose requests are not tracked.
	pending *wirecheck.Pending
	// requests bounds the server's requests to the host (serverreq);
	// nil: unbounded (tests).
	requests *serverreq.Requests
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
func newWire(inner transport.Interface, pending *wirecheck.Pending, requests *serverreq.Requests) (seam transport.Interface, w *wireTransport) {
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
// roots) when the inner transport can carry them, bounded (serverreq);
// SSE cannot, and then the handler is simply never called.
func (w *wireTransport) SetRequestHandler(handler transport.RequestHandler) {
	if bi, ok := w.inner.(transport.BidirectionalInterface); ok {
		if w.requests != nil && handler != nil {
			handler = w.requests.Wrap(handler, w.http)
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
// modern connections (see httpguard's legacy.go).
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
			var call *serverreq.Call
			ctx, call = w.requests.WithCall(ctx)
			defer w.requests.EndCall(call)
		}
		if x != nil && x.headerTool != nil && w.mirrorParams.Load() {
			request = outbound.WithParamHeaders(request, x.headerTool)
		}
		if x != nil && x.secure != nil {
			augmented, attached, err := outbound.AttachSecureArguments(request, x.secure)
			if err != nil {
				return nil, err
			}
			// Headers exist only on HTTP, and the x-mcp-header rules only
			// in the 2026-07-28 era.
			if attached && w.http && w.mirrorParams.Load() {
				augmented = outbound.WithSecureHeaders(augmented, x.secure)
			}
			request = augmented
		}
	}

	if x != nil && x.task != nil {
		rewritten, err := outbound.WithTaskRequest(request, x.task, w.http && w.mirrorParams.Load())
		if err != nil {
			return nil, err
		}
		request = rewritten
	}
	if request.Method == string(mcp.MethodServerDiscover) {
		ctx = httpguard.WithDiscoverProbe(ctx)
	}
	// mcp-go drops a message it cannot parse, and the request it answered
	// would wait for its timeout: the guards fail it through its context.
	if w.pending != nil {
		var (
			id     uint64
			cancel context.CancelCauseFunc
		)
		ctx, id, cancel = w.pending.Track(ctx, w.http)
		defer w.pending.Done(id, cancel)
	}
	response, err := w.inner.SendRequest(ctx, request)
	if err == nil && request.Method == string(mcp.MethodServerDiscover) && outbound.RejectsOwnVersion(request.Params, response) {
		// The server refused the version it names as supported: mcp-go
		// retries only at a different version, and would fall back to
		// the initialize handshake, which such a server does not speak.
		// The probe is sent once more, as it was (SEP-2575).
		response, err = w.inner.SendRequest(ctx, request)
	}
	if err != nil {
		if perr := wirecheck.ProtocolCause(ctx); perr != nil {
			return nil, perr
		}
		return nil, err
	}

	switch request.Method {
	case string(mcp.MethodServerDiscover):
		// Over HTTP the client checked a JSON answer already; this is
		// for the other transports and event-stream answers.
		if response.Error == nil && !httpguard.DiscoverIsModern(response.Result) {
			return httpguard.NotDiscovered(response), nil
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
		if x != nil && x.tasks && taskwire.IsHandle(response.Result) {
			x.result = response.Result
			stub := *response
			stub.Result = taskwire.StubResult
			return &stub, nil
		}
	case taskwire.MethodGet, taskwire.MethodUpdate, taskwire.MethodCancel:
		if x != nil && x.task != nil {
			if response.Error != nil {
				return nil, newRPCError(response.Error)
			}
			x.result = response.Result
		}
	}
	return response, nil
}

// SecureArgs are the secureArguments of calls to one tool, prepared once
// (outbound.SecureArgs).
type SecureArgs = outbound.SecureArgs

// NewSecureArgs prepares the secure values of calls to tool, and the
// x-mcp-header headers that carry some of them (outbound.NewSecureArgs).
func NewSecureArgs(tool string, values map[string]any, headers map[string]string) (*SecureArgs, error) {
	return outbound.NewSecureArgs(tool, values, headers)
}

// SEP-2243: on Streamable HTTP in the 2026-07-28 era a client mirrors every
// tools/call argument whose inputSchema property carries x-mcp-header into
// an Mcp-Param-* header, and excludes a tool whose annotations are invalid.
// mcp-go does both from the definitions it decoded, but the host lists raw
// and mcp-go never sees them: the exclusion is secureparams.Validate's
// (RuleHeader, on every transport) and the mirroring is the seam's, from
// the mcp.Tool secureparams builds once per annotated definition, which the
// call's exchange carries (exchange.headerTool), with mcp-go's own
// GenerateParamHeaders.

// paramHeaderTool is the listed definition of the named tool for
// mirroring, or nil when no argument of it travels in a header or the
// seam mirrors nothing (not HTTP in the 2026-07-28 era).
func (c *Conn) paramHeaderTool(w *wireTransport, name string) *mcp.Tool {
	if !w.mirrorParams.Load() {
		return nil
	}
	snap := c.Snapshot()
	if !snap.inputHeaders {
		return nil
	}
	ct := snap.Tool(name)
	if ct == nil || ct.Status == ToolExcluded {
		return nil
	}
	return ct.Tool.InputHeaderTool()
}
