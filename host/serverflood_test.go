package host

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/config"
)

// floodServer is a streamable HTTP server of the 2025-11-25 era whose tool
// "flood" answers with an event stream of n elicitation/create requests,
// waits until every one of them is answered, and then sends the call's
// result. It keeps counts only, so that the test's heap is the host's.
type floodServer struct {
	n int

	results, refusals, otherErrors atomic.Int64
	answered                       chan struct{} // one per answer
}

func (s *floodServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) != nil {
		http.Error(w, "not JSON", http.StatusBadRequest)
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "session-1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, result)
	}
	switch {
	case msg.Method == "" && msg.ID != nil: // the host's answer to one of ours
		switch {
		case msg.Error != nil && msg.Error.Code == -32000:
			s.refusals.Add(1)
		case msg.Error != nil:
			s.otherErrors.Add(1)
		default:
			s.results.Add(1)
		}
		w.WriteHeader(http.StatusAccepted)
		s.answered <- struct{}{}
	case msg.ID == nil:
		w.WriteHeader(http.StatusAccepted)
	case msg.Method == "initialize":
		reply(`{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}`)
	case msg.Method == "tools/list":
		reply(`{"tools":[{"name":"flood","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`)
	case msg.Method == "tools/call":
		s.flood(w, r, msg.ID)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"jsonrpc":"2.0","error":{"code":-32601,"message":"unknown method"},"id":null}`)
	}
}

func (s *floodServer) flood(w http.ResponseWriter, r *http.Request, id json.RawMessage) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Mcp-Session-Id", "session-1")
	w.WriteHeader(http.StatusOK)
	flusher := w.(http.Flusher)
	out := bufio.NewWriterSize(w, 64<<10)
	// Answers arrive while the requests are still written.
	got := make(chan int, 1)
	go func() {
		n := 0
		for n < s.n {
			select {
			case <-s.answered:
				n++
			case <-r.Context().Done():
				got <- n
				return
			}
		}
		got <- n
	}()
	for i := range s.n {
		fmt.Fprintf(out, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"e-%d\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"Question %d?\",\"requestedSchema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}}}}}\n\n", i, i)
		if i%100 == 99 {
			if out.Flush() != nil {
				return
			}
			flusher.Flush()
		}
	}
	if out.Flush() != nil {
		return
	}
	flusher.Flush()
	n := <-got
	fmt.Fprintf(out, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%d answers\"}]}}\n\n", id, n)
	_ = out.Flush()
	flusher.Flush()
}

// liveBytes is the heap and stack memory in use after a collection.
func liveBytes() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// TestServerRequestFloodInOneCall: a server that answers one tool call
// with 20,000 elicitation/create requests gets at most the per-call bound
// of them handled at once, a JSON-RPC error for each of the rest, and the
// host's memory stays bounded while they are pending. mcp-go starts a
// goroutine per request and holds it until the request is answered: the
// host used to hand all 20,000 to the elicitation handler at once.
func TestServerRequestFloodInOneCall(t *testing.T) {
	n := 20_000
	if raceEnabled {
		n = 4_000
	}
	const perCall = 4 // mcpconn.maxServerRequestsPerCall
	srv := &floodServer{n: n, answered: make(chan struct{}, 1024)}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)

	var current, peak, entered atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	elicit := func(ctx context.Context, _ string, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		entered.Add(1)
		c := current.Add(1)
		defer current.Add(-1)
		for p := peak.Load(); c > p && !peak.CompareAndSwap(p, c); p = peak.Load() {
		}
		select {
		case <-release: // a person answers, late
		case <-ctx.Done(): // mcp-go's 30 s for one request: another may be handled then
		}
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionDecline}}, nil
	}
	cfg := &config.Config{MCPServers: map[string]*config.Server{
		"db": {URL: ts.URL + "/mcp", Type: config.TransportHTTP, CallTimeout: 2 * time.Minute},
	}}
	cfg.Approvals = readsAllowed()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h, err := New(Options{Config: cfg, Logger: logger, Elicitation: elicit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	h.Connect(context.Background())
	if snap := h.Server("db"); snap.Status != StatusConnected {
		t.Fatalf("server %s: %s", snap.Status, snap.Error)
	}
	before := liveBytes()

	type outcome struct {
		res *CallResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "flood", nil)
		done <- outcome{res, err}
	}()
	// Every request the handler did not take is refused; the taken ones
	// wait for a person (or mcp-go's 30 s), so nothing else can answer
	// them.
	deadline := time.After(3 * time.Minute)
	for srv.refusals.Load()+srv.otherErrors.Load()+entered.Load() < int64(n) {
		select {
		case o := <-done:
			t.Fatalf("the call ended early: %v (refused %d)", o.err, srv.refusals.Load())
		case <-deadline:
			t.Fatalf("only %d of %d requests refused or handled; %d handled at once", srv.refusals.Load()+entered.Load(), n, peak.Load())
		case <-time.After(20 * time.Millisecond):
		}
		if got := peak.Load(); got > perCall {
			t.Fatalf("%d requests handled at once, want at most %d; live memory %d MB before, %d MB now", got, perCall, before>>20, liveBytes()>>20)
		}
	}
	during := liveBytes()
	t.Logf("live memory %d MB before, %d MB with the requests pending", before>>20, during>>20)
	releaseOnce.Do(func() { close(release) })
	o := <-done
	if o.err != nil {
		t.Fatalf("call: %v", o.err)
	}
	if text := ContentText(o.res.Result.Content[0]); text != fmt.Sprintf("%d answers", n) {
		t.Errorf("result %q, want every request answered", text)
	}
	if got := peak.Load(); got > perCall {
		t.Errorf("%d requests were handled at once, want at most %d", got, perCall)
	}
	handled := entered.Load()
	if handled < perCall {
		t.Errorf("%d requests handled, want at least %d", handled, perCall)
	}
	if got, want := srv.refusals.Load(), int64(n)-handled; got != want || srv.otherErrors.Load() != 0 {
		t.Errorf("refused %d with -32000 (and %d other errors), want %d", got, srv.otherErrors.Load(), want)
	}
	if got := srv.results.Load(); got != handled {
		t.Errorf("%d requests answered by the handler, want the %d it took", got, handled)
	}
	// Unbounded, every request holds a goroutine and its decoded request
	// until answered; the bound keeps a few dozen.
	if during > before && during-before > 32<<20 {
		t.Errorf("memory grew by %d MB while the requests were pending, want under 32 MB", (during-before)>>20)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), fmt.Sprintf("refused=%d", srv.refusals.Load())) {
		t.Errorf("the log does not record the refusals:\n%.2000s", logs.String())
	}
}
