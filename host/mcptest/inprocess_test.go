package mcptest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// The in-process transport also runs every test of the `transports` list;
// these cover what only it has: the end of the connection.
func TestInProcessTransportEnds(t *testing.T) {
	t.Run("server dies", func(t *testing.T) {
		c, srv := mcpSetup(t, "inprocess", false, nil, testOptions(t))
		if _, err := callTool(ctxTimeout(t, 5*time.Second), c, "echo", nil); err != nil {
			t.Fatalf("echo: %v", err)
		}
		if _, err := callTool(ctxTimeout(t, 5*time.Second), c, "die", nil); err == nil {
			t.Fatal("die call succeeded")
		}
		<-srv.Died()
		_, err := c.ListTools(ctxTimeout(t, 5*time.Second), mcp.ListToolsRequest{})
		var te *transport.Error
		if !errors.As(err, &te) {
			t.Fatalf("dead server: ListTools error %v, want a *transport.Error", err)
		}
	})
	t.Run("connection lost is reported once", func(t *testing.T) {
		srv := newServer(t, testOptions(t))
		tr := srv.InProcessTransport()
		lost := make(chan error, 2)
		lostReporter, ok := tr.(interface{ SetConnectionLostHandler(func(error)) })
		if !ok {
			t.Fatal("the in-process transport cannot report a lost connection")
		}
		lostReporter.SetConnectionLostHandler(func(err error) { lost <- err })
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		die := transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/call",
			Params: withMeta(map[string]any{"name": "die"}, true, nil)}
		for range 2 {
			if _, err := tr.SendRequest(ctxTimeout(t, 5*time.Second), die); err == nil {
				t.Fatal("request to a dying server succeeded")
			}
		}
		if err := <-lost; !errors.Is(err, ErrServerDied) {
			t.Errorf("connection lost with %v, want ErrServerDied", err)
		}
		select {
		case err := <-lost:
			t.Errorf("connection lost reported twice (%v)", err)
		default:
		}
	})
	t.Run("closed", func(t *testing.T) {
		srv := newServer(t, testOptions(t))
		tr := srv.InProcessTransport()
		req := transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "server/discover"}
		if _, err := tr.SendRequest(context.Background(), req); err == nil {
			t.Error("request before Start succeeded")
		}
		if err := tr.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.SendRequest(context.Background(), req); !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("request after Close: %v, want ErrTransportClosed", err)
		}
		if err := tr.Start(context.Background()); !errors.Is(err, transport.ErrTransportClosed) {
			t.Errorf("Start after Close: %v, want ErrTransportClosed", err)
		}
	})
}
