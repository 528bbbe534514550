package mcpconn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// blockingTransport answers no request: SendRequest waits for its context.
type blockingTransport struct{ transport.Interface }

func (blockingTransport) SendRequest(ctx context.Context, _ transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestPendingRequestsFailAtOnce: a protocol failure the reader reports
// ends every request in flight with that error, not with its timeout.
func TestPendingRequestsFailAtOnce(t *testing.T) {
	pending := &wirecheck.Pending{}
	w, _ := newWire(blockingTransport{}, pending, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := w.SendRequest(ctx, transport.JSONRPCRequest{ID: mcp.NewRequestId(int64(i)), Method: "tools/call"})
			errs <- err
		}()
	}
	for pending.Len() != 3 {
		time.Sleep(time.Millisecond)
	}
	pending.FailAll(wirecheck.InvalidMessage("not JSON"))
	for range 3 {
		if err := <-errs; !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not valid JSON-RPC: not JSON") {
			t.Fatalf("error %v, want the protocol error", err)
		}
	}
	if n := pending.Len(); n != 0 {
		t.Errorf("%d requests still tracked", n)
	}
}

// TestHTTPEventStreamGarbageFailsItsRequest: a garbage event on a
// request's own response stream fails that request at once, though the
// server keeps the stream open; the other request in flight is untouched.
func TestHTTPEventStreamGarbageFailsItsRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if bytes.Contains(body, []byte(`"id":1`)) {
			fmt.Fprint(w, "data: not json\n\n")
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	pending := &wirecheck.Pending{}
	inner, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPBasicClient((&Conn{maxResponseBytes: 1 << 20}).httpClient(pending.FailAll, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w, _ := newWire(inner, pending, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	other := make(chan error, 1)
	otherCtx, stopOther := context.WithCancel(ctx)
	go func() {
		_, err := w.SendRequest(otherCtx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(2)), Method: "tools/list"})
		other <- err
	}()
	_, err = w.SendRequest(ctx, transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(1)), Method: "tools/list"})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not valid JSON-RPC") {
		t.Fatalf("error %v, want the protocol error", err)
	}
	select {
	case err := <-other:
		t.Fatalf("the other request ended too: %v", err)
	default:
	}
	stopOther()
	if err := <-other; errors.Is(err, ErrProtocol) {
		t.Fatalf("the other request failed with %v", err)
	}
}
