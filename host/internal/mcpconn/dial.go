package mcpconn

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/errtidy"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/stdiorpc"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
)

// Connect establishes the connection (if needed) and lists tools. It honours
// the reconnect backoff: while a retry is not yet due it fails fast.
func (c *Conn) Connect(ctx context.Context) error {
	_, _, err := c.connect(ctx)
	return err
}

// connect is Connect, returning the live client and its wire seam.
func (c *Conn) connect(ctx context.Context) (*client.Client, *wireTransport, error) {
	if c.cfg.Disabled {
		return nil, nil, fmt.Errorf("server %s is disabled: %w", c.name, ErrServerUnavailable)
	}
	c.mu.Lock()
	for c.client == nil && c.dialing != nil {
		inFlight := c.dialing
		c.mu.Unlock()
		select {
		case <-inFlight:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("connect %s: %w", c.name, ctx.Err())
		}
		c.mu.Lock()
	}
	if c.client != nil {
		cl, w := c.client, c.wire
		c.mu.Unlock()
		return cl, w, nil
	}
	if wait := c.retryAt.Sub(c.now()); c.failures > 0 && wait > 0 {
		last := c.lastErr
		c.mu.Unlock()
		why := "the last attempt failed"
		if last != nil {
			why = last.Error()
		}
		err := fmt.Errorf("server %s: %w (%s); the next attempt in %s", c.name, ErrServerUnavailable, why, wait.Round(time.Millisecond))
		return nil, nil, &withCause{err: err, cause: last}
	}
	done := make(chan struct{})
	c.dialing = done
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.dialing = nil
		c.mu.Unlock()
		close(done)
	}()

	timeout := c.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	cl, w, snap, err := c.dial(cctx)
	if err != nil {
		err = errtidy.Tidy(err)
		c.mu.Lock()
		c.failures++
		c.retryAt = c.now().Add(backoff(c.failures))
		c.lastErr = err
		c.mu.Unlock()
		c.setSnapshot(c.Snapshot().failed(err.Error()))
		return nil, nil, fmt.Errorf("connect %s: %w: %w", c.name, ErrServerUnavailable, err)
	}
	c.mu.Lock()
	c.failures = 0
	reconnect := c.connectedOnce
	c.connectedOnce = true
	c.mu.Unlock()
	if reconnect && c.onReconnect != nil {
		c.onReconnect()
	}
	// The listing is installed before the client is published: a
	// concurrent connect returns as soon as it sees the client, and its
	// caller (a session building its view) must find the tools there.
	c.installListing(snap)
	c.mu.Lock()
	if c.life.Err() != nil {
		c.mu.Unlock()
		_ = cl.Close()
		return nil, nil, fmt.Errorf("server %s: host is shutting down: %w", c.name, ErrServerUnavailable)
	}
	c.client, c.wire = cl, w
	c.mu.Unlock()
	c.listenForChanges(cl)
	return cl, w, nil
}

// withCause is err, with cause (the failure that started a backoff) in its
// chain but not in its message: callers can still tell, for example, that
// the server wants authorization.
type withCause struct {
	err, cause error
}

func (e *withCause) Error() string { return e.err.Error() }
func (e *withCause) Unwrap() []error {
	if e.cause == nil {
		return []error{e.err}
	}
	return []error{e.err, e.cause}
}

// withStderr adds to the error of a stdio server that failed to start the
// last lines it wrote to stderr ("GITHUB_TOKEN is not set" is the usual
// first failure), with the values of its configured env masked.
func (c *Conn) withStderr(err error, inner transport.Interface) error {
	sp, ok := inner.(*stdiorpc.Process)
	if !ok {
		return err
	}
	tail := sp.StderrTail()
	if len(tail) == 0 {
		return err
	}
	text := strings.Join(tail, " | ")
	for _, v := range c.cfg.Env {
		if len(v) >= 4 {
			text = strings.ReplaceAll(text, v, "[REDACTED]")
		}
	}
	return fmt.Errorf("%w; the server's stderr ends with: %s", err, text)
}

// backoff is the wait before reconnect attempt n+1 after n consecutive
// failures: 0.5s, 1s, 2s ... capped at 30s. The first reconnect after a lost
// connection is immediate (failures is 0 then).
func backoff(failures int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < failures && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// dial starts the transport, negotiates the protocol and lists tools.
func (c *Conn) dial(ctx context.Context) (*client.Client, *wireTransport, *ServerSnapshot, error) {
	// Only the host's own transports read through guards that report
	// protocol failures; requests on one handed in are not tracked.
	var pending *wirecheck.Pending
	if c.transport == nil {
		pending = &wirecheck.Pending{}
	}
	requests := serverreq.New(c.logger)
	inner, err := c.newTransport(pending, requests)
	if err != nil {
		return nil, nil, nil, err
	}
	var opts []client.ClientOption
	extensions := c.extensionIDs()
	if c.TasksOn() {
		// Declared on every request of a 2026-07-28 connection (mcp-go
		// sends the capabilities in each request's _meta): a server may
		// answer any tools/call with a task handle then.
		extensions = append(slices.Clip(extensions), config.TasksExtension)
	}
	if len(extensions) > 0 {
		ext := make(map[string]any, len(extensions))
		for _, id := range extensions {
			ext[id] = map[string]any{}
		}
		opts = append(opts, client.WithClientCapabilities(mcp.ClientCapabilities{Extensions: ext}))
	}
	switch c.cfg.ProtocolVersion {
	case config.ProtocolLegacy, config.ProtocolModern:
		opts = append(opts, client.WithProtocolVersion(c.cfg.ProtocolVersion))
	}
	if c.elicitation != nil {
		opts = append(opts, client.WithElicitationHandler(exchangeFreeElicitation{c.elicitation}))
	}
	seam, w := newWire(inner, pending, requests)
	cl := client.NewClient(seam, opts...)
	// The transport lives as long as the connection, not the dial deadline:
	// a stdio transport keeps the context it was started with.
	if err := cl.Start(c.life); err != nil {
		_ = cl.Close()
		return nil, nil, nil, c.withStderr(fmt.Errorf("start transport: %w", err), inner)
	}
	ok := false
	defer func() {
		if !ok {
			_ = cl.Close()
		}
	}()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = c.clientInfo
	if _, err := cl.Initialize(ctx, init); err != nil {
		// Closed first, so that everything the child wrote is read.
		_ = cl.Close()
		return nil, nil, nil, c.withStderr(fmt.Errorf("initialize: %w", err), inner)
	}
	negotiated := cl.ProtocolVersion()
	if pinned := c.cfg.ProtocolVersion; pinned == config.ProtocolModern && negotiated != pinned {
		return nil, nil, nil, fmt.Errorf("protocol version pinned to %s but the server speaks %s", pinned, negotiated)
	}
	snap, err := c.list(ctx, cl, w)
	if err != nil {
		return nil, nil, nil, err
	}
	ok = true
	return cl, w, snap, nil
}
