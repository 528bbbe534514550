// Package inprocess owns mcptest's in-process transport: an mcp-go
// client transport whose messages go to a server connection as the lines
// of a stdio connection would, with neither a process nor a socket, and
// whose answers, notifications and requests come back from what the
// server writes.
package inprocess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Conn is the server's side of one connection: the lines the client
// writes go to Dispatch (false when the server died); Hangup is the
// client closing its end, Release what the server keeps of the connection
// once its handlers ended.
type Conn interface {
	Dispatch(ctx context.Context, handlers *sync.WaitGroup, line []byte) bool
	Hangup()
	Release()
}

// Server is what a transport connects to: Open makes a connection that
// writes to w, Died closes when the server dies, with ErrDied.
type Server struct {
	Open    func(w io.Writer) Conn
	Died    <-chan struct{}
	ErrDied error
}

// New is an unstarted transport to srv.
func New(srv Server) transport.Interface { return &inProcess{srv: srv} }

type inProcess struct {
	srv Server

	mu             sync.Mutex
	conn           Conn
	ctx            context.Context
	cancel         context.CancelFunc
	handlers       sync.WaitGroup
	pending        wire.Waiters[*transport.JSONRPCResponse]
	onNotification func(mcp.JSONRPCNotification)
	onRequest      transport.RequestHandler
	onLost         func(error)
	closed         bool
}

var _ transport.Interface = (*inProcess)(nil)

func (t *inProcess) Start(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return transport.ErrTransportClosed
	}
	if t.conn != nil {
		return errors.New("mcptest: in-process transport already started")
	}
	// The connection lives until Close, not as long as Start's context:
	// mcp-go starts transports with a context that may be short.
	t.ctx, t.cancel = context.WithCancel(context.WithoutCancel(ctx))
	t.conn = t.srv.Open(inProcessWriter{t})
	return nil
}

func (t *inProcess) started() (Conn, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return nil, transport.ErrTransportClosed
	case t.conn == nil:
		return nil, errors.New("mcptest: in-process transport not started")
	}
	return t.conn, nil
}

func (t *inProcess) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	conn, err := t.started()
	if err != nil {
		return nil, err
	}
	line, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("mcptest: encoding %s: %w", request.Method, err)
	}
	rawID, err := json.Marshal(request.ID)
	if err != nil {
		return nil, fmt.Errorf("mcptest: encoding request id: %w", err)
	}
	answer, done := t.pending.Add(wire.IDKey(rawID))
	defer done()

	if !conn.Dispatch(t.ctx, &t.handlers, line) {
		t.lost(t.srv.ErrDied)
		return nil, transport.NewError(t.srv.ErrDied)
	}
	select {
	case resp := <-answer:
		return resp, nil
	case <-ctx.Done():
		cancelled, _ := json.Marshal(wire.NewNotification("notifications/cancelled", map[string]any{"requestId": rawID}))
		conn.Dispatch(t.ctx, &t.handlers, cancelled)
		return nil, ctx.Err()
	case <-t.ctx.Done():
		return nil, transport.ErrTransportClosed
	case <-t.srv.Died:
		t.lost(t.srv.ErrDied)
		return nil, transport.NewError(t.srv.ErrDied)
	}
}

func (t *inProcess) SendNotification(_ context.Context, n mcp.JSONRPCNotification) error {
	conn, err := t.started()
	if err != nil {
		return err
	}
	line, err := json.Marshal(n)
	if err != nil {
		return fmt.Errorf("mcptest: encoding %s: %w", n.Method, err)
	}
	if !conn.Dispatch(t.ctx, &t.handlers, line) {
		t.lost(t.srv.ErrDied)
		return transport.NewError(t.srv.ErrDied)
	}
	return nil
}

func (t *inProcess) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onNotification = handler
}

// SetRequestHandler sets what answers the server's requests (a task's
// elicitation/create during tasks/result).
func (t *inProcess) SetRequestHandler(handler transport.RequestHandler) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onRequest = handler
}

var _ transport.BidirectionalInterface = (*inProcess)(nil)

// request answers a request the server wrote, beside the server's handler
// that waits for the answer (as mcp-go's transports do); without a handler
// the answer is method-not-found, as theirs is.
func (t *inProcess) request(conn Conn, req transport.JSONRPCRequest) {
	t.mu.Lock()
	handler := t.onRequest
	t.mu.Unlock()
	t.handlers.Add(1) // the server's handler that asked holds the group open
	go func() {
		defer t.handlers.Done()
		resp := transport.NewJSONRPCErrorResponse(req.ID, mcp.METHOD_NOT_FOUND, "no handler configured for method: "+req.Method, nil)
		if handler != nil {
			answer, err := handler(t.ctx, req)
			switch {
			case err != nil:
				resp = transport.NewJSONRPCErrorResponse(req.ID, mcp.INTERNAL_ERROR, err.Error(), nil)
			case answer != nil:
				resp = answer
			}
		}
		line, err := json.Marshal(resp)
		if err == nil {
			conn.Dispatch(t.ctx, &t.handlers, line)
		}
	}()
}

func (t *inProcess) SetConnectionLostHandler(handler func(error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.onLost = handler
}

func (t *inProcess) lost(err error) {
	t.mu.Lock()
	handler := t.onLost
	t.onLost = nil // reported once
	t.mu.Unlock()
	if handler != nil {
		handler(err)
	}
}

//lint:ignore ST1003 the name is mcp-go's transport.Interface method
func (t *inProcess) GetSessionId() string { return "" }

// Close ends the connection as a stdio client closing its end would:
// hanging requests are dropped, subscriptions end.
func (t *inProcess) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	conn, cancel := t.conn, t.cancel
	t.mu.Unlock()
	if conn == nil {
		return nil
	}
	conn.Hangup()
	cancel()
	t.handlers.Wait()
	conn.Release()
	return nil
}

// inProcessWriter receives what the server writes to the connection: a
// response goes to the request waiting for it, a notification to the
// client's handler, a request to the client's request handler.
type inProcessWriter struct{ t *inProcess }

func (w inProcessWriter) Write(line []byte) (int, error) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		return 0, fmt.Errorf("mcptest: the server wrote no JSON-RPC message: %w", err)
	}
	t := w.t
	if msg.Method != "" && len(msg.ID) > 0 {
		var req transport.JSONRPCRequest
		if err := json.Unmarshal(line, &req); err != nil {
			return 0, fmt.Errorf("mcptest: decoding request %s: %w", msg.Method, err)
		}
		conn, err := t.started()
		if err != nil {
			return 0, err
		}
		t.request(conn, req)
		return len(line), nil
	}
	if msg.Method != "" && len(msg.ID) == 0 {
		var n mcp.JSONRPCNotification
		if err := json.Unmarshal(line, &n); err != nil {
			return 0, fmt.Errorf("mcptest: decoding notification %s: %w", msg.Method, err)
		}
		t.mu.Lock()
		handler := t.onNotification
		t.mu.Unlock()
		if handler != nil {
			handler(n)
		}
		return len(line), nil
	}
	resp := &transport.JSONRPCResponse{}
	if err := json.Unmarshal(line, resp); err != nil {
		return 0, fmt.Errorf("mcptest: decoding response: %w", err)
	}
	t.pending.Deliver(wire.IDKey(msg.ID), resp)
	return len(line), nil
}
