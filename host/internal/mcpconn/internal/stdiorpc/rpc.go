// Package stdiorpc owns the transport of a stdio MCP server: the child
// process (Process: started from the command it is given, its stderr kept
// by a LineLogger, stopped with its whole tree), and the JSON-RPC over its
// pipes (RPC: each line of stdout read through a wirecheck.LineGuard and
// decoded once). mcpconn builds the command (the pinned file, the
// environment, the sandbox, the supervisor) and hands it in.
package stdiorpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// RPC is the JSON-RPC layer of a stdio connection, an mcp-go
// transport (transport.Interface and BidirectionalInterface) over the
// child's stdin and its stdout. It replaces mcp-go's own stdio transport,
// which reads each line whole with no bound, drops a line it cannot parse
// without a word, and decodes every line twice (once to tell responses
// from notifications and requests, once into the message). Here each line
// is read through a wirecheck.LineGuard (bounded) and decoded once, into rpcMessage:
// that decode is the validity check too, and a line that is not JSON-RPC
// is reported to fail (the requests in flight end with a *wirecheck.ProtocolError,
// see wirecheck.Pending) instead of leaving them to their timeout.
//
// What goes out is what mcp-go's transport writes: each message encoded
// with encoding/json, one per line, writes serialised. Responses are
// matched to requests by id as mcp-go does; an answer for an id nobody
// waits for (a request that has timed out) is dropped.
type RPC struct {
	in    io.WriteCloser       // the child's stdin
	lines *wirecheck.LineGuard // the child's stdout
	fail  func(*wirecheck.ProtocolError)
	// requests holds the reader back while the server's requests in
	// flight are at their bound (serverreq.Requests.Admit), until admitCtx
	// ends; nil: never.
	requests *serverreq.Requests
	admitCtx context.Context
	logger   *slog.Logger

	writeMu sync.Mutex // one message at a time on stdin

	mu       sync.Mutex
	waiting  map[string]chan *transport.JSONRPCResponse // by request id
	notify   func(mcp.JSONRPCNotification)
	onServer transport.RequestHandler
	// handlerCtx is the context Start was given; the server's requests
	// are handled under it, as mcp-go's transport does.
	handlerCtx context.Context

	started   bool
	done      chan struct{} // closed when the reader ends or on close
	closeOnce sync.Once
}

var _ transport.BidirectionalInterface = (*RPC)(nil)

// NewRPC is the JSON-RPC layer over in (a child's stdin) and lines (its
// stdout); fail hears of every line that is not a message.
func NewRPC(in io.WriteCloser, lines *wirecheck.LineGuard, fail func(*wirecheck.ProtocolError), logger *slog.Logger) *RPC {
	if logger == nil {
		logger = slog.Default()
	}
	return &RPC{in: in, lines: lines, fail: fail, logger: logger, admitCtx: context.Background(),
		waiting: make(map[string]chan *transport.JSONRPCResponse), done: make(chan struct{})}
}

// rpcMessage is any JSON-RPC message a server sends, decoded once: a
// response has an id and no method, a notification a method and no id, a
// request both. Params and Result stay raw.
type rpcMessage struct {
	JSONRPC string                   `json:"jsonrpc"`
	ID      *mcp.RequestId           `json:"id,omitempty"`
	Method  string                   `json:"method,omitempty"`
	Params  json.RawMessage          `json:"params,omitempty"`
	Result  json.RawMessage          `json:"result,omitempty"`
	Error   *mcp.JSONRPCErrorDetails `json:"error,omitempty"`
}

// Start starts the reader; the reader is the transport's own goroutine,
// and it ends when stdout does (the child exits or close).
func (r *RPC) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.started {
		r.mu.Unlock()
		return nil
	}
	r.started = true
	r.handlerCtx = ctx
	r.mu.Unlock()
	go r.read()
	return nil
}

// Close ends every request waiting for an answer and closes stdin; the
// reader ends when the child's stdout does.
func (r *RPC) Close() error {
	r.closeDone()
	if err := r.in.Close(); err != nil {
		return fmt.Errorf("failed to close stdin: %w", err)
	}
	return nil
}

func (r *RPC) closeDone() { r.closeOnce.Do(func() { close(r.done) }) }

//lint:ignore ST1003 the name is mcp-go's transport.Interface method
func (r *RPC) GetSessionId() string { return "" }

func (r *RPC) SetNotificationHandler(handler func(mcp.JSONRPCNotification)) {
	r.mu.Lock()
	r.notify = handler
	r.mu.Unlock()
}

func (r *RPC) SetRequestHandler(handler transport.RequestHandler) {
	r.mu.Lock()
	r.onServer = handler
	r.mu.Unlock()
}

// SendRequest writes request and waits for its answer, the end of the
// transport, or the end of ctx.
func (r *RPC) SendRequest(ctx context.Context, request transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	select {
	case <-r.done:
		return nil, transport.ErrTransportClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	encoded, err := json.Marshal(request)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal request: %w", err)
	}
	key := request.ID.String()
	answer := make(chan *transport.JSONRPCResponse, 1)
	r.mu.Lock()
	r.waiting[key] = answer
	r.mu.Unlock()
	forget := func() {
		r.mu.Lock()
		if r.waiting[key] == answer {
			delete(r.waiting, key)
		}
		r.mu.Unlock()
	}
	if err := r.write(encoded); err != nil {
		forget()
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	select {
	case response := <-answer:
		return response, nil
	case <-r.done:
		// An answer may have come just before the reader ended.
		select {
		case response := <-answer:
			return response, nil
		default:
		}
		forget()
		return nil, transport.ErrTransportClosed
	case <-ctx.Done():
		forget()
		return nil, ctx.Err()
	}
}

func (r *RPC) SendNotification(ctx context.Context, notification mcp.JSONRPCNotification) error {
	select {
	case <-r.done:
		return transport.ErrTransportClosed
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	encoded, err := json.Marshal(notification)
	if err != nil {
		return fmt.Errorf("failed to marshal notification: %w", err)
	}
	if err := r.write(encoded); err != nil {
		return fmt.Errorf("failed to write notification: %w", err)
	}
	return nil
}

// write sends one encoded message as a line.
func (r *RPC) write(encoded []byte) error {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	_, err := r.in.Write(append(encoded, '\n'))
	return err
}

// read hands on every line of stdout until it ends, then ends the
// requests still waiting.
func (r *RPC) read() {
	defer r.closeDone()
	for {
		line, err := r.lines.ReadLine()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) && !errors.Is(err, fs.ErrClosed) {
				r.logger.Error("Error reading from stdout", "err", err)
			}
			return
		}
		r.handle(line)
	}
}

// handle decodes one line and delivers it: an answer to the request
// waiting for it, a notification to the handler, a request to the request
// handler. A line that is not a JSON object is reported; a JSON object
// that is not in the shape of a message is dropped, as mcp-go drops it.
func (r *RPC) handle(line []byte) {
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil || line[0] != '{' {
		// The slow path, for a line that is already wrong.
		if problem := wirecheck.MessageProblem(line); problem != "" {
			r.fail(wirecheck.InvalidMessage(problem))
		}
		return
	}
	switch {
	case m.Method != "" && m.ID == nil:
		r.notification(&m)
	case m.Method != "":
		r.requests.Admit(r.admitCtx, line)
		r.serverRequest(&m)
	case m.ID != nil:
		r.mu.Lock()
		key := m.ID.String()
		answer, ok := r.waiting[key]
		delete(r.waiting, key)
		r.mu.Unlock()
		if ok {
			answer <- &transport.JSONRPCResponse{JSONRPC: m.JSONRPC, ID: *m.ID, Result: m.Result, Error: m.Error}
		}
	}
}

func (r *RPC) notification(m *rpcMessage) {
	n := mcp.JSONRPCNotification{JSONRPC: m.JSONRPC, Notification: mcp.Notification{Method: m.Method}}
	if m.Params != nil && json.Unmarshal(m.Params, &n.Params) != nil {
		return
	}
	r.mu.Lock()
	notify := r.notify
	r.mu.Unlock()
	if notify != nil {
		notify(n)
	}
}

// serverRequest runs the request handler on a request of the server's,
// off the reader (the handler bounds how many run, serverreq), and
// sends its answer; with no handler the answer is method-not-found.
func (r *RPC) serverRequest(m *rpcMessage) {
	request := transport.JSONRPCRequest{JSONRPC: m.JSONRPC, ID: *m.ID, Method: m.Method}
	if m.Params != nil {
		var params any
		if json.Unmarshal(m.Params, &params) != nil {
			return
		}
		request.Params = params
	}
	r.mu.Lock()
	handler, ctx := r.onServer, r.handlerCtx
	r.mu.Unlock()
	if handler == nil {
		r.answer(*transport.NewJSONRPCErrorResponse(request.ID, mcp.METHOD_NOT_FOUND, "No request handler configured", nil))
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	go func() {
		if err := ctx.Err(); err != nil {
			r.answer(*transport.NewJSONRPCErrorResponse(request.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
			return
		}
		response, err := handler(ctx, request)
		switch {
		case err != nil:
			r.answer(*transport.NewJSONRPCErrorResponse(request.ID, mcp.INTERNAL_ERROR, err.Error(), nil))
		case response != nil:
			r.answer(*response)
		}
	}()
}

// answer sends the host's answer to a request of the server's.
func (r *RPC) answer(response transport.JSONRPCResponse) {
	encoded, err := json.Marshal(response)
	if err != nil {
		r.logger.Error("Error marshaling response", "err", err)
		return
	}
	if err := r.write(encoded); err != nil {
		r.logger.Error("Error writing response", "err", err)
	}
}
