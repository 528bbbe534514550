package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
)

// legacyServer is a streamable HTTP server of the 2025-11-25 era that
// behaves like the MCP conformance suite's test servers:
//   - catchAll answers every method it does not know, server/discover
//     included, with an empty result, as a 2025-11-25 server may;
//     otherwise server/discover gets 400 with a JSON-RPC error, as the
//     TypeScript SDK answers it;
//   - tool "ask" sends elicitation/create on the standalone GET stream (as
//     the TypeScript SDK does with a request not made through the handler's
//     context) and returns the answer's content as text;
//   - tool "resume" ends its response stream after an event with an id
//     and a retry field, and sends the response on the GET that resumes it
//     with Last-Event-ID (SEP-1699).
type legacyServer struct {
	catchAll bool

	mu          sync.Mutex
	methods     []string
	lastEventID string
	listening   chan struct{} // closed when a GET stream is open
	listenOnce  sync.Once
	toClient    chan string                    // messages for the GET stream
	answers     map[string]chan map[string]any // elicitation id -> the client's result
	resumeID    json.RawMessage                // the id of the call "resume" owes an answer
	elicitCount int
}

func newLegacyServer(t *testing.T, catchAll bool) (*legacyServer, string) {
	t.Helper()
	s := &legacyServer{catchAll: catchAll, listening: make(chan struct{}), toClient: make(chan string, 4),
		answers: map[string]chan map[string]any{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/mcp"
}

func (s *legacyServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

func (s *legacyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.serveGET(w, r)
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}

func (s *legacyServer) serveGET(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Session-Id") != "session-1" {
		http.Error(w, "no session", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		s.mu.Lock()
		s.methods = append(s.methods, "GET Last-Event-ID "+id)
		s.lastEventID = id
		pending := s.resumeID
		s.resumeID = nil
		s.mu.Unlock()
		if pending != nil {
			fmt.Fprintf(w, "event: message\nid: e-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"resumed\"}]}}\n\n", pending)
			flusher.Flush()
		}
		return
	}
	s.mu.Lock()
	s.methods = append(s.methods, "GET")
	s.mu.Unlock()
	flusher.Flush()
	s.listenOnce.Do(func() { close(s.listening) })
	for {
		select {
		case msg := <-s.toClient:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
			flusher.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

func (s *legacyServer) servePOST(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result map[string]any  `json:"result"`
	}
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	if msg.Method == "" { // the client's answer to a request
		s.mu.Lock()
		ch := s.answers[string(msg.ID)]
		s.mu.Unlock()
		if ch != nil {
			ch <- msg.Result
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.mu.Lock()
	s.methods = append(s.methods, msg.Method)
	s.mu.Unlock()
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "session-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}
	switch {
	case msg.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "initialize":
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"legacy","version":"1"}}`)
	case msg.Method == "tools/list":
		reply(`{"tools":[{"name":"ask","inputSchema":{"type":"object"}},{"name":"resume","inputSchema":{"type":"object"}}]}`)
	case msg.Method == "tools/call" && strings.Contains(string(body), `"name":"ask"`):
		s.callAsk(w, r, msg.ID)
	case msg.Method == "tools/call" && strings.Contains(string(body), `"name":"resume"`):
		s.mu.Lock()
		s.resumeID = msg.ID
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "id: e-1\nretry: 20\ndata: \n\n")
	case s.catchAll:
		reply(`{}`)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Invalid or missing session ID"},"id":null}`)
	}
}

// callAsk asks the client on the GET stream, once it is open, and answers
// the call with the content of its answer.
func (s *legacyServer) callAsk(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	result := func(text string, isError bool) {
		w.Header().Set("Content-Type", "application/json")
		out, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"result": map[string]any{"isError": isError, "content": []any{map[string]any{"type": "text", "text": text}}}})
		_, _ = w.Write(out)
	}
	select {
	case <-s.listening:
	case <-r.Context().Done(): // the client gave up (callTimeout)
		return
	}
	s.mu.Lock()
	s.elicitCount++
	askID := fmt.Sprintf(`"ask-%d"`, s.elicitCount)
	ch := make(chan map[string]any, 1)
	s.answers[askID] = ch
	s.mu.Unlock()
	s.toClient <- `{"jsonrpc":"2.0","id":` + askID + `,"method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ada"}}}}}`
	select {
	case answer := <-ch:
		content, _ := json.Marshal(answer["content"])
		result(string(content), false)
	case <-r.Context().Done():
	}
}

// legacyHost is a Host for the legacyServer at url, protocol version auto.
func legacyHost(t *testing.T, url string, elicit ElicitationFunc) (*Host, *strings.Builder) {
	t.Helper()
	cfg := &config.Config{MCPServers: map[string]*config.Server{
		"db": {URL: url, Type: config.TransportHTTP, CallTimeout: 10 * time.Second},
	}}
	cfg.Approvals = readsAllowed()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h, err := New(Options{Config: cfg, Logger: logger, Elicitation: elicit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, logs
}

// A legacy server that answers server/discover with an empty result is a
// legacy server: the host performs the initialize handshake and settles on
// 2025-11-25, rather than taking the empty answer for a discovery.
func TestDiscoverAnsweredWithoutVersionsFallsBackToInitialize(t *testing.T) {
	srv, url := newLegacyServer(t, true)
	h, _ := legacyHost(t, url, nil)
	h.Connect(context.Background())
	snap := h.Server("db")
	if snap.Status != StatusConnected || snap.ProtocolVersion != "2025-11-25" {
		t.Fatalf("snapshot %s %q, protocol %q; want connected on 2025-11-25", snap.Status, snap.Error, snap.ProtocolVersion)
	}
	methods := srv.seen()
	if len(methods) < 2 || methods[0] != "server/discover" || methods[1] != "initialize" {
		t.Errorf("the server saw %q, want server/discover then initialize", methods)
	}
}

// A 2025-11-25 server may ask its question on the GET stream while a call
// is in progress: the host opens that stream and answers there.
func TestElicitationOnTheGETStream(t *testing.T) {
	for _, catchAll := range []bool{false, true} {
		t.Run(fmt.Sprintf("catchAll=%v", catchAll), func(t *testing.T) {
			srv, url := newLegacyServer(t, catchAll)
			var asked []string
			var mu sync.Mutex
			h, _ := legacyHost(t, url, func(_ context.Context, server string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
				mu.Lock()
				asked = append(asked, server+": "+req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
					Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"name": "Grace"}}}, nil
			})
			res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "ask", nil)
			if err != nil {
				t.Fatalf("call: %v (server saw %q)", err, srv.seen())
			}
			if text := ContentText(res.Result.Content[0]); res.IsError() || text != `{"name":"Grace"}` {
				t.Errorf("result %q (isError %v), want the elicitation's content", text, res.IsError())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || asked[0] != "db: Your name?" {
				t.Errorf("elicitations %q, want the server's one question", asked)
			}
		})
	}
}

// A response stream that a 2025-11-25 server ends before the response,
// after an event with an id, is resumed with GET and Last-Event-ID
// (SEP-1699), also when the server answered server/discover with an empty
// result.
func TestEndedResponseStreamIsResumed(t *testing.T) {
	srv, url := newLegacyServer(t, true)
	h, _ := legacyHost(t, url, nil)
	res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "resume", nil)
	if err != nil {
		t.Fatalf("call: %v (server saw %q)", err, srv.seen())
	}
	if text := ContentText(res.Result.Content[0]); text != "resumed" {
		t.Errorf("result %q, want the resumed response", text)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.lastEventID != "e-1" {
		t.Errorf("Last-Event-ID %q, want e-1", srv.lastEventID)
	}
}

// emptyDiscoverTransport answers server/discover with an empty result, as
// a legacy server behind a custom transport may.
type emptyDiscoverTransport struct{ transport.Interface }

func (e emptyDiscoverTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	if req.Method == string(mcp.MethodServerDiscover) {
		return &transport.JSONRPCResponse{JSONRPC: "2.0", ID: req.ID, Result: json.RawMessage(`{}`)}, nil
	}
	return e.Interface.SendRequest(ctx, req)
}

// The same fallback on a transport other than HTTP.
func TestDiscoverAnsweredWithoutVersionsOnAHandedInTransport(t *testing.T) {
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(secureTools)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {CallTimeout: 5 * time.Second}}}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Transports: map[string]TransportFactory{
		"db": func() (transport.Interface, error) { return emptyDiscoverTransport{srv.InProcessTransport()}, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	if snap := h.Server("db"); snap.Status != StatusConnected || snap.ProtocolVersion != "2025-11-25" {
		t.Fatalf("snapshot %s %q, protocol %q; want connected on 2025-11-25", snap.Status, snap.Error, snap.ProtocolVersion)
	}
	if n := len(srv.Recording().Messages("initialize")); n != 1 {
		t.Errorf("the server saw %d initialize requests, want 1", n)
	}
}
