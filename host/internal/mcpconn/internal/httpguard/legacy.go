package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// Two things servers of the 2025-11-25 era do that the host must follow.
//
// The server/discover probe. mcp-go takes any successful answer to the
// probe for a server of the 2026-07-28 era. A legacy server that answers
// every method it does not know with an empty result (as some test and
// proxy servers do) would then never get its initialize handshake, nor the
// session and stream behaviour of its era. An answer is only a discovery
// if it names a protocol version of that era the SDK speaks; anything else
// is handed on as the method-not-found error a legacy server should have
// sent, and the client falls back to initialize.
//
// The standalone GET stream. A 2025-11-25 server may send its requests
// (elicitation/create, sampling) and notifications (tools/list_changed) on
// the stream the client opens with GET, not on the response stream of the
// call in progress; the TypeScript SDK sends every request not made through
// the handler's own context there. HTTP connections open it (mcp-go's
// continuous listening), and mcp-go itself skips it on connections of the
// 2026-07-28 era, which removed it.

// discoverProbeKey marks the context of a server/discover request, so that
// the HTTP client can check the answer before mcp-go's transport reads it:
// the transport takes a successful answer as the start of a modern
// connection (and, for one, starts its GET stream) as soon as it sees it.
type discoverProbeKey struct{}

// WithDiscoverProbe marks ctx as a server/discover request's.
func WithDiscoverProbe(ctx context.Context) context.Context {
	return context.WithValue(ctx, discoverProbeKey{}, true)
}

// DiscoverIsModern reports whether a server/discover result names a
// protocol version of the 2026-07-28 era that the SDK speaks.
func DiscoverIsModern(result json.RawMessage) bool {
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(result, &r) != nil {
		return false
	}
	return slices.ContainsFunc(r.SupportedVersions, func(v string) bool {
		return mcp.IsModernProtocol(v) && mcp.IsValidProtocolVersion(v)
	})
}

// notDiscoveredMessage is the error a discovery that names no version
// becomes.
const notDiscoveredMessage = "server/discover: the answer names no supported protocol version of the 2026-07-28 era"

// NotDiscovered is the method-not-found answer that stands for a
// server/discover result naming no modern version.
func NotDiscovered(resp *transport.JSONRPCResponse) *transport.JSONRPCResponse {
	return &transport.JSONRPCResponse{
		JSONRPC: resp.JSONRPC,
		ID:      resp.ID,
		Error:   &mcp.JSONRPCErrorDetails{Code: mcp.METHOD_NOT_FOUND, Message: notDiscoveredMessage},
	}
}

// checkDiscoverAnswer replaces a JSON answer to server/discover that names
// no modern protocol version with a method-not-found error, before mcp-go
// reads it. The body is read whole, at most max bytes.
func checkDiscoverAnswer(resp *http.Response, max int64) {
	body := resp.Body
	defer body.Close()
	raw, err := io.ReadAll(io.LimitReader(body, max+1))
	switch {
	case err != nil:
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(raw), errReader{err}))
		return
	case int64(len(raw)) > max:
		resp.Body = io.NopCloser(errReader{wirecheck.MessageTooLarge(max)})
		return
	}
	var msg transport.JSONRPCResponse
	if json.Unmarshal(raw, &msg) == nil && msg.Error == nil && !DiscoverIsModern(msg.Result) {
		if replaced, err := json.Marshal(NotDiscovered(&msg)); err == nil {
			raw = replaced
			resp.ContentLength = int64(len(raw))
			resp.Header.Del("Content-Length")
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// listeningRefused maps the answer to a GET that opens the standalone
// stream: a client error other than 401 and 429 means the server does not
// offer the stream, which mcp-go understands as 405 only (on anything else
// it tries again every second, or stops with an error in the log). A 404 is
// left alone on a session: there it may mean that the server forgot the
// session, which mcp-go handles. A GET resuming a response stream carries
// Last-Event-ID and is left alone too.
func listeningRefused(req *http.Request, resp *http.Response) {
	if req.Method != http.MethodGet || req.Header.Get("Last-Event-ID") != "" {
		return
	}
	switch code := resp.StatusCode; {
	case code < 400 || code >= 500, code == http.StatusUnauthorized,
		code == http.StatusTooManyRequests, code == http.StatusMethodNotAllowed:
		return
	case code == http.StatusNotFound && req.Header.Get(transport.HeaderKeySessionID) != "":
		return
	}
	resp.StatusCode = http.StatusMethodNotAllowed
	resp.Status = "405 Method Not Allowed"
}

// QuietListening lowers mcp-go's report of a server that does not offer
// the GET stream from error to debug: the stream is optional, and most
// servers of the 2025-11-25 era have none.
type QuietListening struct{ slog.Handler }

// listeningNotOffered is the message mcp-go logs when the GET stream is
// refused with 405.
const listeningNotOffered = "server does not support listening"

func (q QuietListening) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == listeningNotOffered && r.Level > slog.LevelDebug {
		if !q.Handler.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r.Level = slog.LevelDebug
	}
	return q.Handler.Handle(ctx, r)
}

func (q QuietListening) WithAttrs(attrs []slog.Attr) slog.Handler {
	return QuietListening{q.Handler.WithAttrs(attrs)}
}

func (q QuietListening) WithGroup(name string) slog.Handler {
	return QuietListening{q.Handler.WithGroup(name)}
}
