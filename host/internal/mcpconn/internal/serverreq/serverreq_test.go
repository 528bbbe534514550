package serverreq

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestServerRequestBounds: requests within a call are bounded per call,
// all of them per connection, and a refused request gets a JSON-RPC error
// at once (the handler never sees it).
func TestServerRequestBounds(t *testing.T) {
	tests := []struct {
		name           string
		calls          int // concurrent calls sending requests; 0: outside any call
		each           int // requests sent within each (or outside)
		wantHandled    int
		wantRefusedAll int64
	}{
		{"within one call", 1, MaxPerCall, MaxPerCall, 0},
		{"one call over its bound", 1, 10, MaxPerCall, 10 - MaxPerCall},
		{"many calls over the connection's bound", 8, MaxPerCall, MaxPerConn, 8*MaxPerCall - MaxPerConn},
		{"outside calls", 0, 40, MaxPerConn, 40 - MaxPerConn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(slog.New(slog.DiscardHandler))
			release := make(chan struct{})
			entered := make(chan struct{})
			h := s.Wrap(func(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
				entered <- struct{}{}
				<-release
				return transport.NewJSONRPCResultResponse(req.ID, []byte(`{}`)), nil
			}, false)
			ctxs := []context.Context{context.Background()}
			if tt.calls > 0 {
				ctxs = ctxs[:0]
				for range tt.calls {
					ctx, _ := s.WithCall(context.Background())
					ctxs = append(ctxs, ctx)
				}
			}
			var wg sync.WaitGroup
			handled, refused := 0, 0
			for _, ctx := range ctxs {
				for i := range tt.each {
					req := transport.JSONRPCRequest{JSONRPC: "2.0", ID: mcp.NewRequestId(int64(i)), Method: string(mcp.MethodElicitationCreate)}
					// One at a time: a refusal answers at once, a handled
					// request enters the handler and stays there.
					res := make(chan *transport.JSONRPCResponse, 1)
					wg.Add(1)
					go func() {
						defer wg.Done()
						r, _ := h(ctx, req)
						res <- r
					}()
					select {
					case r := <-res:
						if r.Error == nil || r.Error.Code != CodeRefused {
							t.Fatalf("request answered %+v without being handled", r)
						}
						refused++
					case <-entered:
						handled++
					}
				}
			}
			close(release)
			wg.Wait()
			if handled != tt.wantHandled || s.Refused() != tt.wantRefusedAll || int64(refused) != tt.wantRefusedAll {
				t.Errorf("handled %d, refused %d (counted %d), want %d and %d", handled, refused, s.Refused(), tt.wantHandled, tt.wantRefusedAll)
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.pending != 0 || s.live != 0 {
				t.Errorf("pending %d, live %d after every request ended", s.pending, s.live)
			}
		})
	}
}
