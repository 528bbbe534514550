package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/taskwire"
)

// Refresh re-lists tools on the live connection, connecting first when
// there is none.
func (c *Conn) Refresh(ctx context.Context) error {
	c.mu.Lock()
	cl, w := c.client, c.wire
	c.mu.Unlock()
	if cl == nil {
		return c.Connect(ctx)
	}
	snap, err := c.list(ctx, cl, w)
	if err != nil {
		return fmt.Errorf("refresh %s: %w", c.name, err)
	}
	c.logger.Debug("refreshed", "tools", len(snap.Tools))
	c.installListing(snap)
	return nil
}

// RequestRefresh asks the refresh loop to re-list; bursts coalesce.
func (c *Conn) RequestRefresh() {
	select {
	case c.refreshCh <- struct{}{}:
	default:
	}
}

func (c *Conn) refreshLoop() {
	defer c.wg.Done()
	for {
		select {
		case <-c.life.Done():
			return
		case <-c.refreshCh:
			ctx, cancel := context.WithTimeout(c.life, 30*time.Second)
			if err := c.Refresh(ctx); err != nil && c.life.Err() == nil {
				c.logger.Warn("tool list refresh failed", "err", err)
			}
			cancel()
		}
	}
}

// listenForChanges wires tools/list_changed to a refresh. Legacy connections
// deliver notifications on the transport; modern ones need an opt-in
// subscriptions/listen stream.
func (c *Conn) listenForChanges(cl *client.Client) {
	acked := make(chan struct{})
	var ackOnce sync.Once
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		c.logger.Debug("notification", "method", n.Method)
		switch n.Method {
		case mcp.MethodNotificationToolsListChanged:
			c.RequestRefresh()
		case mcp.MethodNotificationSubscriptionsAcknowledged:
			ackOnce.Do(func() { close(acked) })
			c.taskWatches.Deliver(n.Method, n.Params.AdditionalFields)
		case taskwire.MethodNotification:
			c.taskWatches.Deliver(n.Method, n.Params.AdditionalFields)
		case string(mcp.MethodNotificationProgress):
			c.progress.deliver(n.Params.AdditionalFields)
		}
	})
	caps := cl.GetServerCapabilities()
	if !mcp.IsModernProtocol(cl.ProtocolVersion()) || caps.Tools == nil || !caps.Tools.ListChanged {
		return
	}
	stop, err := cl.ListenAsync(c.life, mcp.SubscriptionFilter{ToolsListChanged: true}, func(err error) {
		c.logger.Debug("subscriptions/listen ended", "err", err)
	})
	if err != nil {
		c.logger.Debug("subscriptions/listen not available", "err", err)
		return
	}
	c.mu.Lock()
	c.stopListen = stop
	c.mu.Unlock()
	// A change the server makes before the stream is established would be
	// lost: wait (briefly) for the server to acknowledge the subscription.
	timer := time.NewTimer(2 * time.Second)
	defer timer.Stop()
	select {
	case <-acked:
	case <-timer.C:
		c.logger.Debug("subscriptions/listen not acknowledged in time")
	case <-c.life.Done():
	}
}

// dropClient forgets a broken connection so the next call reconnects.
func (c *Conn) dropClient(cl *client.Client, cause error) {
	c.mu.Lock()
	if c.client != cl {
		c.mu.Unlock()
		return
	}
	c.client, c.wire = nil, nil
	stop := c.stopListen
	c.stopListen = nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	_ = cl.Close()
	c.logger.Warn("connection lost", "err", cause)
	c.setSnapshot(c.Snapshot().failed("connection lost: " + cause.Error()))
}

// isConnectionFailure reports errors after which the connection is unusable.
// A protocol error is not one: messages are framed (a line, a body, an
// event), so the next message is read as if the bad one was never sent.
func isConnectionFailure(err error) bool {
	// An authorization failure concerns one request's subject, not the
	// connection that other sessions share.
	if errors.Is(err, ErrProtocol) || isAuthorizationFailure(err) {
		return false
	}
	var te *transport.Error
	return errors.As(err, &te) || errors.Is(err, transport.ErrTransportClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE)
}

// isAuthorizationFailure reports the failed authorization of one request
// (host.AuthorizationFailure, which an Authorizer's transport returns).
func isAuthorizationFailure(err error) bool {
	f, ok := errors.AsType[interface {
		error
		IsAuthorizationFailure() bool
	}](err)
	return ok && f.IsAuthorizationFailure()
}
