// Package httpguard owns what the host puts between mcp-go's HTTP
// transports (streamable HTTP, legacy SSE) and the network: the bounds on a
// response body and on each event of a stream, the check of each event
// (wirecheck), the hold on a stream's reader while the server's requests
// are at their bound (serverreq), and what servers of the 2025-11-25 era
// need (legacy.go: the server/discover probe, the standalone GET stream).
// It knows nothing of a connection; mcpconn builds its HTTP client on
// Transport.
package httpguard

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// Transport bounds what an HTTP server connection reads: a response
// body to Max bytes, an event stream to Max bytes per event. It also
// checks each event of a stream the way the stdio transport checks its
// lines: an event that cannot be a JSON-RPC message fails the request
// whose response stream it is on, or, on a stream shared by the
// connection (the SSE transport's, a listening GET), every request in
// flight (FailAll).
type Transport struct {
	Base    http.RoundTripper
	Max     int64
	FailAll func(*wirecheck.ProtocolError)
	// Requests holds a stream's reader back while the server's requests
	// in flight are at their bound (serverreq.Requests.Admit); nil: never.
	Requests *serverreq.Requests
}

// RoundTrip sends req on Base and puts the guards on its answer.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.Base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	listeningRefused(req, resp)
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode == http.StatusNotFound && req.Method == http.MethodPost && media == "application/json" {
		unknownToolAsError(resp)
	}
	if resp.StatusCode == http.StatusOK && media == "application/json" && req.Context().Value(discoverProbeKey{}) != nil {
		checkDiscoverAnswer(resp, t.Max)
	}
	if media != "text/event-stream" {
		resp.Body = &bodyLimit{body: resp.Body, max: t.Max}
		return resp, nil
	}
	fail := t.FailAll
	if own, ok := wirecheck.OwnFail(req.Context()); ok {
		fail = own
	}
	resp.Body = &eventGuard{body: resp.Body, max: t.Max, fail: fail, requests: t.Requests, ctx: req.Context()}
	return resp, nil
}

// bodyLimit fails a read beyond max bytes.
type bodyLimit struct {
	body io.ReadCloser
	max  int64
	n    int64
}

func (b *bodyLimit) Read(p []byte) (int, error) {
	if b.n > b.max {
		return 0, wirecheck.MessageTooLarge(b.max)
	}
	if room := b.max - b.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := b.body.Read(p)
	b.n += int64(n)
	if b.n > b.max {
		return n - int(b.n-b.max), wirecheck.MessageTooLarge(b.max)
	}
	return n, err
}

func (b *bodyLimit) Close() error { return b.body.Close() }

// eventGuard watches an event stream as it is read: it fails a read once
// one event exceeds max bytes, and reports an event whose data is not a
// JSON-RPC message. Only message events are checked (the SSE transport's
// endpoint event is a URL).
type eventGuard struct {
	body io.ReadCloser
	max  int64
	fail func(*wirecheck.ProtocolError)
	// requests and ctx (the stream's request's): see Transport.
	requests *serverreq.Requests
	ctx      context.Context

	size   int64  // bytes of the current event so far
	line   []byte // the current line, up to the first bytes needed
	data   []byte // the current event's data
	event  string
	broken error
}

func (g *eventGuard) Close() error { return g.body.Close() }

func (g *eventGuard) Read(p []byte) (int, error) {
	if g.broken != nil {
		return 0, g.broken
	}
	n, err := g.body.Read(p)
	if perr := g.scan(p[:n]); perr != nil {
		g.broken = perr
		g.fail(perr)
		return 0, perr
	}
	return n, err
}

// scan follows the stream's lines and events (text/event-stream framing).
func (g *eventGuard) scan(b []byte) *wirecheck.ProtocolError {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		seg := b
		if i >= 0 {
			seg = b[:i]
		}
		g.size += int64(len(seg)) + 1
		if g.size > g.max {
			return wirecheck.MessageTooLarge(g.max)
		}
		g.line = append(g.line, seg...)
		if i < 0 {
			return nil
		}
		b = b[i+1:]
		g.endLine()
	}
	return nil
}

func (g *eventGuard) endLine() {
	line := bytes.TrimSuffix(g.line, []byte{'\r'})
	g.line = g.line[:0]
	switch {
	case len(line) == 0:
		if len(g.data) > 0 && (g.event == "" || g.event == "message") {
			if problem := wirecheck.MessageProblem(bytes.TrimSpace(g.data)); problem != "" {
				g.fail(wirecheck.InvalidMessage(problem))
			} else {
				g.requests.Admit(g.ctx, g.data)
			}
		}
		g.data, g.event, g.size = g.data[:0], "", 0
		if cap(g.data) > wirecheck.BigLine {
			g.data = nil
		}
	case bytes.HasPrefix(line, []byte("data:")):
		if len(g.data) > 0 {
			g.data = append(g.data, '\n')
		}
		g.data = append(g.data, bytes.TrimPrefix(line[5:], []byte{' '})...)
	case bytes.HasPrefix(line, []byte("event:")):
		g.event = string(bytes.TrimSpace(line[6:]))
	}
}

// maxNotFoundBody bounds what is read of a 404 answer to recognise it.
const maxNotFoundBody = 64 << 10

// unknownToolAsError turns a 404 whose body is a JSON-RPC error -32601
// (SEP-3221's answer to a call of a tool the server no longer knows) into
// an ordinary error answer. mcp-go takes every 404 to a POST for "session
// terminated" and drops the session, which would end the connection for
// every session of the host, where the right answer is to refresh the
// tool list once. A 404 with any other body (a real unknown session) is
// left as it is.
func unknownToolAsError(resp *http.Response) {
	head, err := io.ReadAll(io.LimitReader(resp.Body, maxNotFoundBody+1))
	rest := resp.Body
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), rest), rest}
	if err != nil || len(head) > maxNotFoundBody {
		return
	}
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(head, &msg) != nil || msg.JSONRPC != "2.0" || msg.Error == nil || msg.Error.Code != -32601 {
		return
	}
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
}
