package durable_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/pgstore"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// The canaries: a session value and a secret from a credential source.
// Neither may appear in any row the engine or the stores write.
const (
	canarySession = "CANARY-SESSION-7f3a91"
	canarySecret  = "CANARY-SECRET-c0ffee42"
)

var postgres struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if postgres.cluster != nil {
		_ = postgres.cluster.Stop()
	}
	os.Exit(code)
}

// backends runs f against SQLite and a real PostgreSQL.
func backends(t *testing.T, f func(t *testing.T, b backend)) {
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		f(t, backend{name: "sqlite", dsn: "sqlite:" + filepath.Join(dir, "durable.db"), approvalsDSN: filepath.Join(dir, "approvals.db")})
	})
	t.Run("postgres", func(t *testing.T) { f(t, postgresBackend(t)) })
}

// postgresBackend is a new database of the tests' PostgreSQL.
func postgresBackend(t *testing.T) backend {
	t.Helper()
	postgres.once.Do(func() { postgres.cluster, postgres.err = pgtest.StartCluster() })
	if postgres.err != nil {
		t.Fatalf("start PostgreSQL: %v", postgres.err)
	}
	dsn := postgres.cluster.NewDatabase(t)
	return backend{name: "postgres", dsn: dsn, approvalsDSN: dsn}
}

type backend struct {
	name         string
	dsn          string // the engine's database
	approvalsDSN string // the approvals store's
}

func (b backend) openApprovals(t *testing.T) approvals.Store {
	t.Helper()
	ctx := context.Background()
	var s approvals.Store
	var err error
	if b.name == "sqlite" {
		s, err = sqlitestore.Open(ctx, b.approvalsDSN, sqlitestore.Options{})
	} else {
		s, err = pgstore.Open(ctx, b.approvalsDSN, pgstore.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// toolsJSON: lookup (a read the catalogue classifies: idempotent by a
// trusted source), write_note (a mutate the rules allow: not idempotent),
// delete_order (a delete that asks one approver).
const toolsJSON = `[
 {"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]}},
 {"name": "write_note", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
  "annotations": {"category": "mutate", "riskLevel": "medium", "blastRadius": "item", "reversibility": "manual", "approvalRecommendation": "none", "minTrustLevel": 1}},
 {"name": "delete_order", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}, "token": {"type": "string"}}, "required": ["instance", "token"]},
  "annotations": {"category": "delete", "riskLevel": "high", "blastRadius": "item", "reversibility": "none", "approvalRecommendation": "single", "minTrustLevel": 1}}
]`

// server is the MCP server the "processes" of a test share (it outlives
// them, as a real server does). Its handler counts calls per tool and
// echoes the secure values back (the host must mask them everywhere).
type server struct {
	srv   *mcptest.Server
	calls sync.Map // tool -> *atomic.Int32
	// block, when set for a tool, holds its next call: hit is signalled
	// and the call waits for release.
	mu      sync.Mutex
	block   map[string]chan struct{}
	hit     chan string
	release chan struct{}
}

func newServer(t *testing.T) *server { return newServerWith(t, toolsJSON) }

// newServerWith is newServer with other tools.
func newServerWith(t *testing.T, tools string) *server {
	s := &server{block: map[string]chan struct{}{}, hit: make(chan string, 8), release: make(chan struct{})}
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(tools),
		Handler: func(ctx context.Context, tool string, args, secure map[string]json.RawMessage) (string, bool) {
			n, _ := s.calls.LoadOrStore(tool, new(atomic.Int32))
			n.(*atomic.Int32).Add(1)
			s.mu.Lock()
			_, blocked := s.block[tool]
			delete(s.block, tool)
			s.mu.Unlock()
			if blocked {
				s.hit <- tool
				select {
				case <-s.release:
				case <-ctx.Done():
				}
			}
			return fmt.Sprintf("%s %s done on %s with %s", tool, args["id"], secure["instance"], secure["token"]), false
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s.srv = srv
	return s
}

func (s *server) count(tool string) int {
	n, ok := s.calls.Load(tool)
	if !ok {
		return 0
	}
	return int(n.(*atomic.Int32).Load())
}

func (s *server) blockNext(tool string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.block[tool] = make(chan struct{})
}

// receivedCall is a tools/call request the server received.
type receivedCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta"`
}

// received are the calls to tool the server received, in order.
func (s *server) received(t *testing.T, tool string) []receivedCall {
	t.Helper()
	var out []receivedCall
	for _, m := range s.srv.Recording().Messages("tools/call") {
		var msg struct {
			Params receivedCall `json:"params"`
		}
		if err := json.Unmarshal(m.Message, &msg); err != nil {
			t.Fatal(err)
		}
		if msg.Params.Name == tool {
			out = append(out, msg.Params)
		}
	}
	return out
}

// idempotencyKeys are the _meta idempotency keys of the calls to tool the
// server received, in order.
func (s *server) idempotencyKeys(t *testing.T, tool string) []string {
	t.Helper()
	var keys []string
	for _, c := range s.received(t, tool) {
		k, _ := c.Meta[host.IdempotencyKeyMeta].(string)
		keys = append(keys, k)
	}
	return keys
}

func ptr(s string) *string { return &s }

func testConfig(askTimeout time.Duration) *config.Config {
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {Tasks: config.TasksAuto}},
		Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
			"instance": {Session: "instance"},
			"token":    {Source: "vault", Ref: "db/token"},
		}}},
		Approvals: rules.Config{
			Catalogue: []rules.CatalogueEntry{{Server: "db", Tool: "lookup", Metadata: risk.RawMetadata{
				Category: ptr("read"), RiskLevel: ptr("low"), BlastRadius: ptr("item"), Reversibility: ptr("auto"),
				ApprovalRecommendation: ptr("none"), MinTrustLevel: 1}},
				{Server: "db", Tool: "write_note", Metadata: risk.RawMetadata{
					Category: ptr("mutate"), RiskLevel: ptr("medium"), BlastRadius: ptr("item"), Reversibility: ptr("manual"),
					ApprovalRecommendation: ptr("none"), MinTrustLevel: 1}},
				{Server: "db", Tool: "delete_order", Metadata: risk.RawMetadata{
					Category: ptr("delete"), RiskLevel: ptr("high"), BlastRadius: ptr("item"), Reversibility: ptr("none"),
					ApprovalRecommendation: ptr("single"), MinTrustLevel: 1}}},
			Rules: []rules.Rule{
				{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"},
				{ID: "writes", When: rules.Match{Category: []string{"mutate"}}, Decide: "allow"},
				{ID: "deletes", When: rules.Match{Category: []string{"delete"}}, Decide: "ask", Approvers: 1, Timeout: askTimeout},
			},
		},
	}
	cfg.ApplyDefaults()
	return cfg
}

var vault = bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) {
	return bindings.Resolved{Value: canarySecret, Sensitivity: bindings.Secret, Expiry: time.Now().Add(time.Hour)}, nil
})

// scriptModel asks for the calls of plan after the user's message, then
// answers with the last tool result. It counts requests across the
// processes of a test (the model is asked again only when a step was not
// checkpointed).
type scriptModel struct {
	plan  []model.ToolCall
	asked atomic.Int32

	mu   sync.Mutex
	sent strings.Builder // every request's messages, as the model saw them
}

// seen is every message the model was sent, as text.
func (m *scriptModel) seen() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sent.String()
}

func (m *scriptModel) Generate(_ context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	m.asked.Add(1)
	m.mu.Lock()
	m.sent.WriteString(jsonLines(req.Messages))
	m.mu.Unlock()
	last := req.Messages[len(req.Messages)-1]
	msg := model.Message{Role: model.RoleAssistant}
	if last.Role == model.RoleUser {
		msg.ToolCalls = m.plan
	} else {
		msg.Content = "Done: " + last.Content
	}
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Message: msg, Usage: model.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}}, nil)
	}
}

// process is one run of the host on the durable database: an engine, a
// host, and the crash points of this run.
type process struct {
	engine *durable.Engine
	host   *host.Host
	crash  *crasher
	srv    *server // the MCP server it calls
}

// start opens a process. crashAt names where its turns stop as a killed
// process would ("" for none): "sent" (after the decision record, before
// the send is recorded), "task" (after the task a call created is
// recorded), "append-tool" (after the tool results, before they reach the
// conversation).
func start(t *testing.T, b backend, srv *server, m *scriptModel, store approvals.Store, askTimeout time.Duration, crashAt string, onRaised func(approvals.Approval)) *process {
	t.Helper()
	return startAs(t, "test-executor", b, srv, m, store, askTimeout, crashAt, onRaised)
}

// startAs is start with the engine's executor id.
func startAs(t *testing.T, executor string, b backend, srv *server, m *scriptModel, store approvals.Store, askTimeout time.Duration, crashAt string, onRaised func(approvals.Approval)) *process {
	t.Helper()
	e, err := durable.Open(context.Background(), b.dsn, durable.Options{ExecutorID: executor, ShutdownTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := &crasher{Engine: e, at: crashAt, hit: make(chan struct{}, 1)}
	h, err := host.New(host.Options{
		Config:     testConfig(askTimeout),
		Sources:    map[string]bindings.Source{"vault": vault},
		Model:      m,
		ModelName:  "scripted",
		Transports: map[string]host.TransportFactory{"db": func() (transport.Interface, error) { return srv.srv.InProcessTransport(), nil }},
		Approver:   approvals.StoreApprover{Store: store, OnRaised: onRaised},
		Durability: c,
	})
	if err != nil {
		_ = e.Close()
		t.Fatal(err)
	}
	p := &process{engine: e, host: h, crash: c, srv: srv}
	t.Cleanup(p.kill)
	return p
}

// kill stops the process as SIGKILL would as far as the database is
// concerned: running turns stop where they are, nothing more is
// checkpointed.
func (p *process) kill() {
	_ = p.engine.Close()
	_ = p.host.Close()
}

func (p *process) session(id string) *host.Session {
	return p.host.NewSession(host.SessionOptions{ID: id, Subject: "alice", Values: map[string]string{"instance": canarySession}})
}

// crasher wraps the engine with crash points: at one, the turn signals
// hit and then stays there until the engine stops.
type crasher struct {
	*durable.Engine
	at  string
	hit chan struct{}

	mu   sync.Mutex
	wctx context.Context
}

func (c *crasher) Start(run host.DurableTurnFunc) error {
	return c.Engine.Start(func(ctx context.Context, steps host.Steps, rec host.TurnRecord) error {
		c.mu.Lock()
		c.wctx = ctx
		c.mu.Unlock()
		return run(ctx, crashSteps{steps, c}, rec)
	})
}

func (c *crasher) History() host.History { return crashHistory{c.Engine.Store(), c} }

// stopHere is a crash point: it signals and waits for the engine to stop.
func (c *crasher) stopHere(point string) error {
	if c.at != point {
		return nil
	}
	c.mu.Lock()
	wctx := c.wctx
	c.mu.Unlock()
	select {
	case c.hit <- struct{}{}:
	default:
	}
	<-wctx.Done()
	return fmt.Errorf("crashed at %s", point)
}

type crashSteps struct {
	host.Steps
	c *crasher
}

func (s crashSteps) Sent(ctx context.Context, key string) (int, error) {
	if err := s.c.stopHere("sent"); err != nil {
		return 0, err
	}
	return s.Steps.Sent(ctx, key)
}

// SentTask records the task, then is the crash point "task": the call's
// server is running its task when the process stops.
func (s crashSteps) SentTask(ctx context.Context, key, taskID string) error {
	if err := s.Steps.(host.TaskSteps).SentTask(ctx, key, taskID); err != nil {
		return err
	}
	return s.c.stopHere("task")
}

func (s crashSteps) TaskOf(ctx context.Context, key string) (string, error) {
	return s.Steps.(host.TaskSteps).TaskOf(ctx, key)
}

type crashHistory struct {
	*durable.Store
	c *crasher
}

func (h crashHistory) AppendAt(ctx context.Context, id string, at int, msgs ...model.Message) error {
	if len(msgs) > 0 && msgs[0].Role == model.RoleTool {
		if err := h.c.stopHere("append-tool"); err != nil {
			return err
		}
	}
	return h.Store.AppendAt(ctx, id, at, msgs...)
}

// drain collects a turn's events (it must end with session_end).
func drain(t *testing.T, seq iter.Seq[host.Event]) []host.Event {
	t.Helper()
	var events []host.Event
	for e := range seq {
		events = append(events, e)
	}
	return events
}

func lastEnd(t *testing.T, events []host.Event) host.Event {
	t.Helper()
	if len(events) == 0 || events[len(events)-1].Type != host.EventSessionEnd {
		t.Fatalf("no session_end: %s", describe(events))
	}
	return events[len(events)-1]
}

func describe(events []host.Event) string { return jsonLines(events) }

// jsonLines renders items as JSON, one a line.
func jsonLines[T any](items []T) string {
	var b strings.Builder
	for _, e := range items {
		j, _ := json.Marshal(e)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// runInBackground runs a turn in a goroutine (the process may be killed
// under it) and returns its events when it ends.
func runInBackground(s *host.Session, prompt string) <-chan []host.Event {
	out := make(chan []host.Event, 1)
	go func() {
		var events []host.Event
		for e := range s.Turn(context.Background(), prompt, host.TurnOptions{}) {
			events = append(events, e)
		}
		out <- events
	}()
	return out
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// askAndKill runs a turn of session in p whose call asks for approval,
// kills p while the call waits, and returns the request.
func askAndKill(t *testing.T, p *process, raised <-chan approvals.Approval, session, prompt string) approvals.Approval {
	t.Helper()
	done := runInBackground(p.session(session), prompt)
	a := waitFor(t, raised, "the approval request")
	p.kill()
	waitFor(t, done, "the killed turn's events")
	return a
}

// waitingCall is a durable turn whose call (delete_order of an order)
// asked for approval in a process that was then killed while it waited.
type waitingCall struct {
	srv   *server
	m     *scriptModel
	store approvals.Store
	first approvals.Approval // the request it raised
}

// killedWhileAsking runs such a turn of session in a first process,
// whose asks wait until askTimeout.
func killedWhileAsking(t *testing.T, b backend, session, order string, askTimeout time.Duration) waitingCall {
	t.Helper()
	w := waitingCall{srv: newServer(t), m: &scriptModel{plan: calls("delete_order", order)}, store: b.openApprovals(t)}
	raised := make(chan approvals.Approval, 4)
	p := start(t, b, w.srv, w.m, w.store, askTimeout, "", func(a approvals.Approval) { raised <- a })
	w.first = askAndKill(t, p, raised, session, "delete order "+order)
	return w
}
