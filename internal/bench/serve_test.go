package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/serve"
)

// The serve benchmark: 1,000 sessions at once, each running scripted
// turns (model → one tool call on an in-process MCP server → model →
// answer), through the library directly and through `agenthost serve`
// over loopback HTTP with the events as SSE.
const (
	serveSessions     = 1000
	serveTurnsPerSess = 3
	serveToken        = "bench-token"
)

// stamp is "t=<unix nanoseconds>": the model and the tool put the moment
// they produced their text into it, so a client can tell how long the
// event took to reach it.
func stamp() string { return "t=" + strconv.FormatInt(time.Now().UnixNano(), 10) }

// stampAge reads a stamp out of text and returns its age.
func stampAge(text string, now time.Time) (time.Duration, bool) {
	i := strings.Index(text, "t=")
	if i < 0 {
		return 0, false
	}
	j := i + 2
	for j < len(text) && text[j] >= '0' && text[j] <= '9' {
		j++
	}
	ns, err := strconv.ParseInt(text[i+2:j], 10, 64)
	if err != nil {
		return 0, false
	}
	return now.Sub(time.Unix(0, ns)), true
}

type serveFixture struct {
	host *host.Host
	srv  *serve.Server
	ts   *httptest.Server
	apiClient
}

// apiClient is a client of the HTTP API (serve's, or the floor server's
// that speaks the same requests).
type apiClient struct {
	url  string
	http *http.Client
}

func newServeFixture(tb testing.TB) *serveFixture { return newServeFixtureOn(tb, "") }

// newServeFixtureOn is the fixture with its turns in memory (dsn ""), or
// durable on dsn (durableServe).
func newServeFixtureOn(tb testing.TB, dsn string) *serveFixture {
	tb.Helper()
	mcp, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "lookup", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
	  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`),
		Handler: func(context.Context, string, map[string]json.RawMessage, map[string]json.RawMessage) (string, bool) {
			return "found " + stamp(), false
		}})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {TrustAnnotations: true}},
		Approvals:  rules.Config{Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}},
		Serve: config.Serve{Identities: []config.Identity{{Name: "bench", TokenSHA256: sha256Hex(serveToken), Roles: []string{config.RoleAPI}}},
			MaxSessions: 20_000},
	}
	cfg.ApplyDefaults()
	llm := model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		if req.Messages[len(req.Messages)-1].Role == model.RoleTool {
			return model.Message{Content: "answer " + stamp()}, model.Usage{TotalTokens: 1}, nil
		}
		return model.Message{ToolCalls: []model.ToolCall{{ID: "c1", Name: "db__lookup", Arguments: `{"q":"x"}`}}}, model.Usage{TotalTokens: 1}, nil
	})
	audit := serve.NewAuditLog(0)
	opts := host.Options{Config: cfg, Model: llm, ModelName: "scripted", AuditAlso: audit,
		Transports: map[string]host.TransportFactory{"db": func() (transport.Interface, error) { return mcp.InProcessTransport(), nil }}}
	var shared *serve.Shared
	if dsn != "" {
		shared = durableServe(tb, dsn, &opts) // serveproc_test.go
	}
	h, err := host.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	h.Connect(context.Background())
	srv, err := serve.New(serve.Options{Host: h, Config: cfg.Serve, Audit: audit, Shared: shared})
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	tr := &http.Transport{MaxIdleConns: 2 * serveSessions, MaxIdleConnsPerHost: 2 * serveSessions, IdleConnTimeout: time.Minute}
	f := &serveFixture{host: h, srv: srv, ts: ts, apiClient: apiClient{url: ts.URL, http: &http.Client{Transport: tr}}}
	tb.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.CloseClientConnections()
		_ = srv.Close()
		ts.Close()
		_ = h.Close()
		_ = mcp.Close()
	})
	return f
}

func (f *apiClient) post(path string, body any) (*http.Response, error) {
	data, _ := json.Marshal(body)
	req, err := http.NewRequest("POST", f.url+path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+serveToken)
	req.Header.Set("Content-Type", "application/json")
	return f.http.Do(req)
}

func (f *apiClient) createSession() (string, error) {
	resp, err := f.post("/v1/sessions", map[string]any{"subject": "bench"})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var info struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil || resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("create session: %d %v", resp.StatusCode, err)
	}
	return info.ID, nil
}

// latencies collects event ages from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d...)
	l.mu.Unlock()
}

func (l *latencies) p(q float64) time.Duration {
	if len(l.d) == 0 {
		return 0
	}
	slices.Sort(l.d)
	return l.d[min(len(l.d)-1, int(float64(len(l.d))*q))]
}

// libraryRound runs the turns through Session.Turn directly.
func libraryRound(tb testing.TB, h *host.Host, lat *latencies) (wall, cpu time.Duration) {
	sessions := make([]*host.Session, serveSessions)
	for i := range sessions {
		sessions[i] = h.NewSession(host.SessionOptions{Subject: "bench"})
	}
	var failed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, s := range sessions {
		wg.Go(func() {
			<-start
			var ages []time.Duration
			for range serveTurnsPerSess {
				ok := false
				for e := range s.Turn(context.Background(), "look it up", host.TurnOptions{}) {
					now := time.Now()
					switch e.Type {
					case host.EventToolResult:
						if len(e.Content) > 0 {
							if d, ok := stampAge(host.ContentText(e.Content[0]), now); ok {
								ages = append(ages, d)
							}
						}
					case host.EventAssistant:
						if d, ok := stampAge(e.Text, now); ok {
							ages = append(ages, d)
						}
					case host.EventSessionEnd:
						ok = e.Reason == host.EndDone
					}
				}
				if !ok {
					failed.Add(1)
				}
			}
			lat.add(ages)
		})
	}
	runtime.GC() // the previous round's garbage is not this round's cost
	began, cpu0 := time.Now(), cpuTime()
	close(start)
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu0
	for _, s := range sessions {
		s.Close()
	}
	if n := failed.Load(); n > 0 {
		tb.Fatalf("%d library turns failed", n)
	}
	return elapsed, cpu
}

// serveRound runs the same turns through the HTTP API: each session is
// created over HTTP, each turn POSTed and its SSE stream read to
// session_end.
func serveRound(tb testing.TB, f *serveFixture, lat *latencies) (wall, cpu time.Duration) {
	ids := make([]string, serveSessions)
	for i := range ids {
		id, err := f.createSession()
		if err != nil {
			tb.Fatal(err)
		}
		ids[i] = id
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, id := range ids {
		wg.Go(func() {
			<-start
			var ages []time.Duration
			for range serveTurnsPerSess {
				ok, err := f.turn(id, &ages)
				if !ok {
					failed.Add(1)
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
					}
				}
			}
			lat.add(ages)
		})
	}
	runtime.GC() // the previous round's garbage is not this round's cost
	began, cpu0 := time.Now(), cpuTime()
	close(start)
	wg.Wait()
	elapsed, cpu := time.Since(began), cpuTime()-cpu0
	for _, id := range ids {
		f.deleteSession(id)
	}
	if n := failed.Load(); n > 0 {
		tb.Fatalf("%d served turns failed; first: %v", n, firstErr.Load())
	}
	return elapsed, cpu
}

// turn posts one turn and reads its stream, adding event ages.
func (f *apiClient) turn(id string, ages *[]time.Duration) (bool, error) {
	resp, err := f.post("/v1/sessions/"+id+"/turns", map[string]any{"message": "look it up"})
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return false, fmt.Errorf("turn: %d %s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 4<<10), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			now := time.Now()
			switch event {
			case "tool_result", "assistant":
				if d, ok := stampAge(line, now); ok {
					*ages = append(*ages, d)
				}
			case "session_end":
				// Read to the end (the server ends the stream) so the
				// connection goes back to the pool.
				_, _ = io.Copy(io.Discard, resp.Body)
				return strings.Contains(line, `"reason":"done"`), nil
			}
		}
	}
	return false, fmt.Errorf("the stream ended without session_end: %v", sc.Err())
}

// BenchmarkServeSSE: one op is a round of 1,000 sessions × 3 turns at
// once, through the library and through serve, alternately. Reported:
// turns/s of each, their ratio (serve/library, the target is ≥ 0.80), and
// the p50/p99 age of tool_result and assistant events when the client
// reads them (from the moment the tool or the model produced the text).
func BenchmarkServeSSE(b *testing.B) {
	f := newServeFixture(b)
	var libLat, srvLat latencies
	var libTime, srvTime, libCPU, srvCPU time.Duration
	b.ResetTimer()
	for range b.N {
		wall, cpu := libraryRound(b, f.host, &libLat)
		libTime, libCPU = libTime+wall, libCPU+cpu
		wall, cpu = serveRound(b, f, &srvLat)
		srvTime, srvCPU = srvTime+wall, srvCPU+cpu
	}
	b.StopTimer()
	turns := float64(b.N * serveSessions * serveTurnsPerSess)
	lib, srv := turns/libTime.Seconds(), turns/srvTime.Seconds()
	b.ReportMetric(lib, "library-turns/s")
	b.ReportMetric(srv, "serve-turns/s")
	b.ReportMetric(srv/lib, "serve/library")
	// CPU time per turn (user + system, the whole process: in the serve
	// round that includes the HTTP client's share): what bounds
	// throughput on a saturated machine, and steadier than wall time on
	// a shared one.
	b.ReportMetric(float64(libCPU.Microseconds())/turns, "library-cpu-µs/turn")
	b.ReportMetric(float64(srvCPU.Microseconds())/turns, "serve-cpu-µs/turn")
	b.ReportMetric(float64(libCPU)/float64(srvCPU), "serve/library-cpu")
	b.ReportMetric(float64(libLat.p(0.50).Microseconds())/1000, "library-p50-ms")
	b.ReportMetric(float64(libLat.p(0.99).Microseconds())/1000, "library-p99-ms")
	b.ReportMetric(float64(srvLat.p(0.50).Microseconds())/1000, "serve-p50-ms")
	b.ReportMetric(float64(srvLat.p(0.99).Microseconds())/1000, "serve-p99-ms")
}

// BenchmarkServeIdleSessions: the live heap that 10,000 sessions created
// through the API add (the served session, its host session and the
// server's bookkeeping), after a GC.
func BenchmarkServeIdleSessions(b *testing.B) {
	f := newServeFixture(b)
	const n = 10_000
	var per float64
	for range b.N {
		b.StopTimer()
		base := heapInUse()
		b.StartTimer()
		ids := make([]string, n)
		for i := range ids {
			id, err := f.createSession()
			if err != nil {
				b.Fatal(err)
			}
			ids[i] = id
		}
		b.StopTimer()
		f.http.CloseIdleConnections()
		used := heapInUse()
		per = (float64(used) - float64(base)) / n
		for _, id := range ids {
			f.deleteSession(id)
		}
		runtime.GC()
		b.StartTimer()
	}
	b.ReportMetric(per, "B/session")
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
