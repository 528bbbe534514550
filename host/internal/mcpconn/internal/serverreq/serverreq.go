// Package serverreq owns the bounds on the requests an MCP server sends the
// host (elicitation, sampling, roots, ping): how many are handled at once
// per tool call and per connection, the refusal of the excess, and the
// hold on a transport's reader while too many are in flight (Admit). It
// knows nothing of a connection: the transports and mcpconn's seam call
// it.
package serverreq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
)

// Server-to-client requests (elicitation/create, sampling/createMessage,
// roots/list, ping) are bounded per connection. mcp-go's transports start
// one goroutine for each request a server sends, on any stream, and keep
// it until the request is answered (HTTP: up to 30 s), so a server that
// sent 100,000 elicitation requests in one call's answer held 1.2 GB of
// the host. Here:
//
//   - at most MaxPerCall requests sent while one tool call
//     runs (on its answer stream, or on a stream shared by the connection
//     while the call is the only one) are handled at once, and at most
//     MaxPerConn over the connection; a request beyond either
//     is answered at once with a JSON-RPC error (CodeRefused),
//     counted, and logged (once per call; outside calls at the 1st, 10th,
//     100th, ... refusal of the connection);
//   - the streams' readers (httpguard's event guard, stdiorpc) stop reading while
//     MaxLive requests are handled or being answered, so the
//     refusals themselves, each one an HTTP POST on mcp-go's goroutine,
//     cannot pile up either: the server is held back by its own socket.
const (
	MaxPerCall = 4
	MaxPerConn = 16
	MaxLive    = 64
	// CodeRefused is the JSON-RPC error of a refused request
	// (implementation-defined server error range).
	CodeRefused = -32000
)

// Requests is one connection's account of the requests its server
// sent the host. The zero value is not usable: New.
type Requests struct {
	logger *slog.Logger

	mu sync.Mutex
	// pending are the requests inside the host's handler; live also
	// counts those whose answer is being sent (the goroutine mcp-go
	// started for each has not ended).
	pending, live int
	refused       int64
	// wake is closed when live drops while a reader waits; nil when no
	// reader waits.
	wake chan struct{}
}

func New(logger *slog.Logger) *Requests {
	return &Requests{logger: logger}
}

// Call are the requests of one tool call, kept in the call's
// context (callKey); guarded by Requests.mu.
type Call struct {
	// ctx is the call's context: a Call is the context that carries it
	// (WithCall), as context.WithValue(ctx, callKey{}, call) would be,
	// without a context of its own.
	ctx     context.Context
	pending int
	refused int
	method  string // of the first refused request
}

type callKey struct{}

// WithCall returns ctx carrying a fresh account for one tool call.
func (s *Requests) WithCall(ctx context.Context) (context.Context, *Call) {
	call := &Call{ctx: ctx}
	return (*callCtx)(call), call
}

// callCtx is a Call as the context carrying it: ctx's deadline,
// cancellation and values, and the Call under callKey.
type callCtx Call

func (c *callCtx) Deadline() (time.Time, bool) { return c.ctx.Deadline() }
func (c *callCtx) Done() <-chan struct{}       { return c.ctx.Done() }
func (c *callCtx) Err() error                  { return c.ctx.Err() }

func (c *callCtx) Value(key any) any {
	if _, ok := key.(callKey); ok {
		return (*Call)(c)
	}
	return c.ctx.Value(key)
}

// EndCall logs what the call's server requests had refused.
func (s *Requests) EndCall(call *Call) {
	s.mu.Lock()
	refused, method := call.refused, call.method
	s.mu.Unlock()
	if refused > 0 {
		s.logger.Warn("mcpconn: the server sent more requests during one tool call than the host handles at once; the excess was refused with a JSON-RPC error",
			"refused", refused, "method", method, "perCall", MaxPerCall, "perConnection", MaxPerConn)
	}
}

// Refused is how many requests of the server were refused so far.
func (s *Requests) Refused() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Wrap bounds handler (see the constants). sendsAfter: the transport
// sends an answer after handler returns and ends the context it gave
// handler once it has (mcp-go's HTTP transports); otherwise the answer is
// written before handler's goroutine goes on (stdio).
func (s *Requests) Wrap(handler transport.RequestHandler, sendsAfter bool) transport.RequestHandler {
	return func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
		call, _ := ctx.Value(callKey{}).(*Call)
		s.mu.Lock()
		s.live++
		ok := s.pending < MaxPerConn && (call == nil || call.pending < MaxPerCall)
		var refused int64
		if ok {
			s.pending++
			if call != nil {
				call.pending++
			}
		} else {
			s.refused++
			refused = s.refused
			if call != nil {
				if call.refused == 0 {
					call.method = req.Method
				}
				call.refused++
			}
		}
		s.mu.Unlock()
		if sendsAfter {
			context.AfterFunc(ctx, s.ended)
		} else {
			defer s.ended()
		}
		if !ok {
			if call == nil && isPowerOfTen(refused) {
				s.logger.Warn("mcpconn: the server sent more requests than the host handles at once; the excess is refused with a JSON-RPC error",
					"method", req.Method, "refused", refused, "perConnection", MaxPerConn)
			}
			return transport.NewJSONRPCErrorResponse(req.ID, CodeRefused,
				fmt.Sprintf("too many requests from the server pending: the client handles at most %d at once per tool call and %d per connection", MaxPerCall, MaxPerConn), nil), nil
		}
		defer func() {
			s.mu.Lock()
			s.pending--
			if call != nil {
				call.pending--
			}
			s.mu.Unlock()
		}()
		return handler(ctx, req)
	}
}

// ended counts one request's goroutine as ended and wakes waiting readers.
func (s *Requests) ended() {
	s.mu.Lock()
	s.live--
	if s.wake != nil && s.live < MaxLive {
		close(s.wake)
		s.wake = nil
	}
	s.mu.Unlock()
}

// Admit is called by a stream's reader with each message (stdiorpc: each
// request of the server's) before it is handed on: for a request of the
// server it waits while
// MaxLive requests are live, or until ctx ends.
func (s *Requests) Admit(ctx context.Context, msg []byte) {
	if s == nil || !s.saturated() || !looksLikeServerRequest(msg) {
		// The message is looked at only when readers may have to wait:
		// most messages are answers, and decoding each (up to
		// maxResponseBytes) would be paid on every call.
		return
	}
	for {
		s.mu.Lock()
		if s.live < MaxLive {
			s.mu.Unlock()
			return
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return
		}
	}
}

// saturated reports that MaxLive requests are live.
func (s *Requests) saturated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live >= MaxLive
}

// looksLikeServerRequest: msg has a method and an id (not a notification,
// not a response). Only readers' waits depend on it; the bound itself is
// counted in the handler.
func looksLikeServerRequest(msg []byte) bool {
	if !bytes.Contains(msg, []byte(`"method"`)) || !bytes.Contains(msg, []byte(`"id"`)) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Method != nil && len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
}

func isPowerOfTen(n int64) bool {
	for n >= 10 && n%10 == 0 {
		n /= 10
	}
	return n == 1
}
