package mcptest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/mcptest/internal/wire"
)

// serverRequest is an outgoing JSON-RPC request, from the server to a
// client.
type serverRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  map[string]any  `json:"params,omitempty"`
}

var errCannotAsk = errors.New("this stream cannot carry a request to the client")

// ask sends a request to the client on the stream that carries x (stdio:
// the connection; HTTP: the SSE response of x) and waits for the client's
// answer, which arrives as a message of its own (answered). The wait ends
// with x, the connection or the server.
func (s *Server) ask(x *exchange, method string, params map[string]any) (*wire.Message, error) {
	if x.request == nil {
		return nil, errCannotAsk
	}
	id := json.RawMessage(fmt.Sprintf(`"mcptest-ask-%d"`, s.askSeq.Add(1)))
	answer, done := s.asks.Add(wire.IDKey(id))
	defer done()
	if err := x.request(serverRequest{JSONRPC: "2.0", ID: id, Method: method, Params: params}); err != nil {
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	select {
	case m := <-answer:
		return m, nil
	case <-x.ctx.Done():
		return nil, x.ctx.Err()
	case <-x.abandoned:
		return nil, errStreamClosed
	case <-s.closed:
		return nil, errStreamClosed
	case <-s.died:
		return nil, ErrServerDied
	}
}

// answered hands a client's response to the ask waiting for it.
func (s *Server) answered(msg *wire.Message) { s.asks.Deliver(wire.IDKey(msg.ID), msg) }
