package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/syncbuf"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// Tokens of the test identities.
const (
	apiToken   = "api-token-for-tests"
	aliceToken = "alice-token-for-tests"
	bobToken   = "bob-token-for-tests"
)

func hashHex(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

const testTools = `[
 {"name": "lookup", "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}},
 {"name": "delete_rows", "description": "Deletes the rows that match where.", "inputSchema": {"type": "object", "properties": {"where": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 1}},
 {"name": "drop_table", "inputSchema": {"type": "object", "properties": {"table": {"type": "string"}}},
  "annotations": {"category": "destroy", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "multi", "minTrustLevel": 1}}
]`

// scriptedModel calls the tool named by the user message ("call NAME
// ARGS", or "say TEXT then call NAME ARGS" to write TEXT before the call),
// then answers with the tool's result text; any other message is answered
// with itself.
func scriptedModel() model.LLM {
	return model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleTool {
			return model.Message{Content: "done: " + last.Content}, model.Usage{TotalTokens: 1}, nil
		}
		said, command := "", last.Content
		if text, rest, ok := strings.Cut(strings.TrimPrefix(command, "say "), " then "); ok && strings.HasPrefix(command, "say ") {
			said, command = text, rest
		}
		if name, args, ok := strings.Cut(strings.TrimPrefix(command, "call "), " "); ok && strings.HasPrefix(command, "call ") {
			return model.Message{Content: said, ToolCalls: []model.ToolCall{{ID: "call_1", Name: name, Arguments: args}}}, model.Usage{TotalTokens: 1}, nil
		}
		return model.Message{Content: last.Content}, model.Usage{TotalTokens: 1}, nil
	})
}

type fixture struct {
	t      testing.TB
	srv    *Server
	ts     *httptest.Server
	h      *host.Host
	logs   *syncBuffer
	calls  *syncBuffer // what the MCP server saw (secure values on purpose)
	client *http.Client
	// stop closes the server, the engine and the host (once; at the
	// test's end, or before to stop a replica as if it died).
	stop func()
}

// syncBuffer is a buffer safe to read while others write to it.
type syncBuffer = syncbuf.Buffer

func testServeConfig() config.Serve {
	return config.Serve{Identities: []config.Identity{
		{Name: "backend", TokenSHA256: hashHex(apiToken), Roles: []string{config.RoleAPI}, Subjects: []string{"carol"}},
		{Name: "alice", TokenSHA256: hashHex(aliceToken), Roles: []string{config.RoleApprover}},
		{Name: "bob", TokenSHA256: hashHex(bobToken), Roles: []string{config.RoleApprover}},
	}}
}

// fixtureTransports, when set, are more servers of the fixture's host (a
// test adds their config entries with newFixtureWith).
var fixtureTransports map[string]host.TransportFactory

func newFixture(t testing.TB, mod func(*config.Serve)) *fixture {
	t.Helper()
	return newFixtureWith(t, mod, nil)
}

// newFixtureWith is newFixture with a change to the host's config too.
func newFixtureWith(t testing.TB, mod func(*config.Serve), modCfg func(*config.Config)) *fixture {
	t.Helper()
	return newFixtureShared(t, mod, modCfg, nil)
}

// sharedFixture puts a fixture in the shared mode: its host runs turns on
// a durable engine that open opens (on the PostgreSQL of approvals.store),
// and its server keeps sessions there.
type sharedFixture struct {
	open func(t testing.TB) (host.Durability, *Shared, func())
}

// newFixtureShared is newFixtureWith, in the shared mode when sh is set.
func newFixtureShared(t testing.TB, mod func(*config.Serve), modCfg func(*config.Config), sh *sharedFixture) *fixture {
	t.Helper()
	f := &fixture{t: t, logs: &syncBuffer{}, calls: &syncBuffer{}}
	mcp, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(testTools),
		Handler: func(_ context.Context, tool string, args, secure map[string]json.RawMessage) (string, bool) {
			fmt.Fprintf(f.calls, "%s %s\n", tool, secure["token"])
			return tool + " ran", false
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {TrustAnnotations: true}},
		Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
			"token": {Session: "token", Sensitivity: "secret"},
		}}},
		Approvals: rules.Config{Rules: []rules.Rule{
			{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
			{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1},
			{ID: "destroys", When: rules.Match{Category: []string{"destroy"}}, Decide: "ask", Approvers: 2},
		}},
	}
	if modCfg != nil {
		modCfg(cfg)
	}
	cfg.ApplyDefaults()
	sc := testServeConfig()
	if mod != nil {
		mod(&sc)
	}
	cfg.Serve = sc
	audit := NewAuditLog(0)
	logger := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	transports := map[string]host.TransportFactory{"db": func() (transport.Interface, error) { return mcp.InProcessTransport(), nil }}
	maps.Copy(transports, fixtureTransports)
	var (
		durability  host.Durability
		shared      *Shared
		closeEngine = func() {}
	)
	if sh != nil {
		durability, shared, closeEngine = sh.open(t)
	}
	h, err := compose.New(context.Background(), cfg, compose.Options{Databases: stores.Databases{}, Host: host.Options{Model: scriptedModel(), ModelName: "scripted",
		Logger: logger, AuditAlso: audit, Observer: fixtureObserver, Transports: transports, Durability: durability}})
	if err != nil {
		t.Fatal(err)
	}
	h.Connect(context.Background())
	srv, err := New(Options{Host: h, Config: cfg.Serve, Audit: audit, Logger: logger, hookBackoff: time.Millisecond, Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	f.srv, f.h = srv, h
	f.ts = httptest.NewServer(srv.Handler())
	f.client = f.ts.Client()
	f.stop = sync.OnceFunc(func() {
		f.ts.CloseClientConnections()
		_ = srv.Close()
		f.ts.Close()
		closeEngine()
		_ = h.Close()
		_ = mcp.Close()
	})
	t.Cleanup(f.stop)
	return f
}

// do sends a request with token (empty: none) and returns the status and body.
func (f *fixture) do(method, path, token string, body any) (int, []byte, http.Header) {
	f.t.Helper()
	return f.doWith(method, path, token, body, nil)
}

// doWith is do with more request headers (they replace do's own, such as
// Content-Type).
func (f *fixture) doWith(method, path, token string, body any, hdr http.Header) (int, []byte, http.Header) {
	f.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			f.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, rd)
	if err != nil {
		f.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	f.record(method, path, resp.StatusCode, resp.Header.Get("Content-Type"), data)
	return resp.StatusCode, data, resp.Header
}

// responses are every answer the fixture saw, for the canary and the
// OpenAPI checks.
type seenResponse struct {
	method, path, contentType string
	status                    int
	body                      []byte
}

var (
	seenMu sync.Mutex
	seen   []seenResponse
)

func (f *fixture) record(method, path string, status int, ct string, body []byte) {
	seenMu.Lock()
	seen = append(seen, seenResponse{method, path, ct, status, body})
	seenMu.Unlock()
}

func (f *fixture) createSession(values map[string]string) sessionInfo {
	f.t.Helper()
	status, body, _ := f.do("POST", "/v1/sessions", apiToken, map[string]any{"subject": "carol", "trustLevel": 2, "values": values})
	if status != http.StatusCreated {
		f.t.Fatalf("create session: %d %s", status, body)
	}
	var info sessionInfo
	if err := json.Unmarshal(body, &info); err != nil {
		f.t.Fatal(err)
	}
	return info
}

// sseEvent is one parsed Server-Sent Event.
type parsedEvent struct {
	id   int64
	name string
	data string
}

// readSSE parses events from r until it ends or stop says so.
func readSSE(r io.Reader, stop func(parsedEvent) bool) ([]parsedEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	var out []parsedEvent
	var cur parsedEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.data != "" || cur.name != "" {
				out = append(out, cur)
				if stop != nil && stop(cur) {
					return out, nil
				}
			}
			cur = parsedEvent{}
		case strings.HasPrefix(line, "id: "):
			n, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				return out, err
			}
			cur.id = n
		case strings.HasPrefix(line, "event: "):
			cur.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.data += strings.TrimPrefix(line, "data: ")
		}
	}
	return out, sc.Err()
}

// startTurn posts a turn and returns the open stream.
func (f *fixture) startTurn(sessionID, message string) *http.Response {
	f.t.Helper()
	return f.startTurnAs(apiToken, sessionID, message)
}

// startTurnAs is startTurn by the identity of token.
func (f *fixture) startTurnAs(token, sessionID, message string) *http.Response {
	f.t.Helper()
	b, _ := json.Marshal(map[string]any{"message": message})
	req, _ := http.NewRequest("POST", f.ts.URL+"/v1/sessions/"+sessionID+"/turns", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		f.t.Fatalf("post turn: %d %s", resp.StatusCode, body)
	}
	return resp
}

// waitPending waits (bounded by the test's deadline) for one pending approval.
func (f *fixture) waitPending() approvalView {
	f.t.Helper()
	ch, stop, _ := f.srv.watch.subscribe("test")
	defer stop()
	for {
		if list := f.open(); len(list) > 0 {
			return f.srv.approvalView(list[0], nil)
		}
		if !f.anyTurnRunning() {
			f.t.Fatal("no turn is running and nothing waits for approval")
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (f *fixture) anyTurnRunning() bool {
	f.srv.mu.Lock()
	defer f.srv.mu.Unlock()
	if len(f.srv.local) > 0 { // the shared mode's turns
		return true
	}
	for _, ss := range f.srv.sessions {
		ss.mu.Lock()
		running := ss.turn != nil && ss.turn.running
		ss.mu.Unlock()
		if running {
			return true
		}
	}
	return false
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// waitOther waits for a pending approval other than id.
func (f *fixture) waitOther(id string) approvalView {
	f.t.Helper()
	ch, stop, _ := f.srv.watch.subscribe("test")
	defer stop()
	for {
		for _, p := range f.open() {
			if p.ID != id {
				return f.srv.approvalView(p, nil)
			}
		}
		if !f.anyTurnRunning() {
			f.t.Fatal("no turn is running and nothing else waits for approval")
		}
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// open lists the open approval requests of the server's store.
func (f *fixture) open() []approvals.Approval {
	f.t.Helper()
	list, err := f.srv.store.List(context.Background(), approvals.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []approvals.Approval
	for _, a := range list {
		if a.Open(time.Now()) {
			out = append(out, a)
		}
	}
	return out
}
