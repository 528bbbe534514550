package mcptest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agenthost/agenthost/host/mcptest/internal/client"
)

// StartHTTP serves a new server on a loopback httptest server for the life
// of the test and returns the endpoint URL. A die fault closes the listener,
// so later connections are refused as they would be by a dead process.
func StartHTTP(t testing.TB, opts Options) (string, *Server) {
	t.Helper()
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("mcptest.New: %v", err)
	}
	ts := httptest.NewServer(srv.HTTPHandler())
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-srv.Died():
			_ = ts.Listener.Close()
			ts.CloseClientConnections()
		case <-stopWatch:
		}
	}()
	t.Cleanup(func() {
		close(stopWatch)
		<-watched
		_ = srv.Close() // ends hanging handlers first, so ts.Close does not wait on them
		ts.Close()
	})
	return ts.URL + srv.opts.Path, srv
}

// ModernMeta is the _meta of a 2026-07-28 request declaring the given
// extension ids (none when empty).
func ModernMeta(extensions ...string) map[string]any { return client.ModernMeta(extensions...) }

// Response is a decoded JSON-RPC response.
type Response = client.Response

// PostResult is the raw answer to PostMessage: Status, Header and Body;
// its Response method decodes the JSON-RPC response (JSON or SSE).
type PostResult = client.PostResult

// SSEData returns the data payloads of an event stream body.
func SSEData(body []byte) []json.RawMessage { return client.SSEData(body) }

// PostMessage POSTs one JSON-RPC message. For a modern message (its _meta
// names 2026-07-28) it adds the Mcp-Protocol-Version, Mcp-Method and, for
// tools/call, Mcp-Name headers unless header already sets them.
func PostMessage(ctx context.Context, url string, header http.Header, msg any) (*PostResult, error) {
	return client.PostMessage(ctx, url, header, msg)
}
