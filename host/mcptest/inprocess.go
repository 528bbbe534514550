package mcptest

import (
	"context"
	"io"
	"sync"

	"github.com/agenthost/agenthost/host/mcptest/internal/inprocess"
	"github.com/mark3labs/mcp-go/client/transport"
)

// InProcessTransport connects an mcp-go client to s with neither a process
// nor a socket: each message is handled exactly as a line of a stdio
// connection would be (and recorded as "stdio"), on the caller's goroutine
// unless the request may block. Encoding and decoding still happen on both
// sides, as with mcp-go's own in-process transport, so the server sees the
// bytes a client would send. Every call returns a new, unstarted transport
// with its own connection state (legacy session, subscriptions).
func (s *Server) InProcessTransport() transport.Interface {
	return inprocess.New(inprocess.Server{Open: s.openInProcess, Died: s.died, ErrDied: ErrServerDied})
}

// openInProcess is an in-process connection writing to w.
func (s *Server) openInProcess(w io.Writer) inprocess.Conn { return s.newStdioConn(w) }

// Dispatch, Hangup and Release are an in-process connection's (inprocess.Conn).
func (c *stdioConn) Dispatch(ctx context.Context, handlers *sync.WaitGroup, line []byte) bool {
	return c.dispatch(ctx, handlers, line)
}

func (c *stdioConn) Hangup() { close(c.inputClosed) }

func (c *stdioConn) Release() { c.srv.unsubscribe(c.sess.subscriber) }
