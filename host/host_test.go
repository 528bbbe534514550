package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/secureparams"
)

const secureTools = `[
 {"name": "execute_sql", "description": "Run SQL.",
  "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
  "secureInputSchema": {"type": "object", "properties": {
     "project_id": {"type": "string"}, "instance": {"type": "string"},
     "region": {"type": "string", "x-mcp-header": "Region"}},
   "required": ["project_id", "instance"]}},
 {"name": "mrtr_sql", "x-test": {"inputRequired": 2},
  "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}}, "required": ["instance"]}},
 {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
 {"name": "leaky", "x-test": {"echoSecure": true},
  "inputSchema": {"type": "object"},
  "secureInputSchema": {"type": "object", "properties": {"instance": {"type": "string"}}, "required": ["instance"]}},
 {"name": "boom", "x-test": {"errorCode": -32603, "errorMessage": "kaboom"}, "inputSchema": {"type": "object"}},
 {"name": "die", "x-test": {"die": true}, "inputSchema": {"type": "object"}}
]`

const canary = "CANARY-7f3a9c-instance"

// testHost starts an in-process HTTP test server and a Host with bindings
// for it. era is "" (auto), "2025-11-25" or "2026-07-28".
func testHost(t *testing.T, era string, opts mcptest.Options) (*Host, *mcptest.Server, *strings.Builder) {
	t.Helper()
	if opts.ToolsJSON == nil && opts.ToolsFile == "" {
		opts.ToolsJSON = []byte(secureTools)
	}
	url, srv := mcptest.StartHTTP(t, opts)
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{
			"db": {URL: url, Type: config.TransportHTTP, ProtocolVersion: era, CallTimeout: 5 * time.Second},
		},
		Bindings: []config.Binding{{
			Server: "db",
			Params: map[string]config.ParamBinding{
				"project_id": {Value: "retail-prod"},
				"instance":   {Session: "instance"},
				"region":     {Value: "us-west1"},
			},
		}},
	}
	cfg.Approvals = readsAllowed()
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &strings.Builder{}
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&mu, logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := New(Options{Config: cfg, Logger: logger, Elicitation: acceptAll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h, srv, logs
}

func acceptAll(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"ok": true}}}, nil
}

// readsAllowed classifies every tool of server db as a low-risk read and
// allows reads; approvals tests build their own policies.
func readsAllowed() rules.Config {
	str := func(s string) *string { return &s }
	return rules.Config{
		Catalogue: []rules.CatalogueEntry{{Server: "db", Tool: "*", Metadata: risk.RawMetadata{
			Category: str("read"), RiskLevel: str("low"), BlastRadius: str("item"), Reversibility: str("auto"),
			ApprovalRecommendation: str("none"), MinTrustLevel: 1,
		}}},
		Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}},
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func toolCalls(t *testing.T, srv *mcptest.Server) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	for _, m := range srv.Recording().Messages("tools/call") {
		out = append(out, m.Params())
	}
	return out
}

func TestSecureCallOnTheWire(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			h, srv, logs := testHost(t, era, mcptest.Options{})
			ctx := context.Background()
			h.Connect(ctx)
			snap := h.Server("db")
			if snap.Status != StatusConnected || !snap.SecureParams || snap.ProtocolVersion != era {
				t.Fatalf("snapshot: %+v", snap)
			}
			s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
			res, err := s.CallTool(ctx, "db", "execute_sql", json.RawMessage(`{"query":"SELECT 1"}`))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError() {
				t.Fatalf("isError result: %+v", res.Result)
			}
			calls := toolCalls(t, srv)
			if len(calls) != 1 {
				t.Fatalf("got %d tools/call", len(calls))
			}
			var secure map[string]any
			if err := json.Unmarshal(calls[0]["secureArguments"], &secure); err != nil {
				t.Fatalf("secureArguments: %v (%s)", err, calls[0]["secureArguments"])
			}
			want := map[string]any{"project_id": "retail-prod", "instance": canary, "region": "us-west1"}
			for k, v := range want {
				if secure[k] != v {
					t.Errorf("secureArguments[%s] = %v, want %v", k, secure[k], v)
				}
			}
			if len(secure) != len(want) {
				t.Errorf("undeclared names sent: %v", secure)
			}
			if era == "2026-07-28" {
				got := srv.Recording().Messages("tools/call")[0].Headers
				if hv := headerValue(got, "Mcp-Param-Region"); hv != "us-west1" {
					t.Errorf("Mcp-Param-Region header = %q (headers %v)", hv, got)
				}
			}
			if strings.Contains(logs.String(), canary) {
				t.Errorf("canary in logs")
			}
		})
	}
}

func headerValue(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func TestSecureValuesResentOnEveryRound(t *testing.T) {
	h, srv, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": "checkout"}})
	if _, err := s.CallTool(context.Background(), "db", "mrtr_sql", json.RawMessage(`{"query":"x"}`)); err != nil {
		t.Fatal(err)
	}
	calls := toolCalls(t, srv)
	if len(calls) != 3 {
		t.Fatalf("got %d rounds, want 3", len(calls))
	}
	if _, ok := calls[2]["inputResponses"]; !ok {
		t.Errorf("final round carries no inputResponses: %v", calls[2])
	}
	for i, c := range calls {
		if string(c["secureArguments"]) != `{"instance":"checkout"}` {
			t.Errorf("round %d secureArguments = %s", i, c["secureArguments"])
		}
	}
}

func TestCallFailuresSendNothing(t *testing.T) {
	tests := []struct {
		name   string
		tool   string
		args   string
		values map[string]string
		kind   Kind
		is     error
	}{
		{"secure name in arguments", "execute_sql", `{"query":"x","Instance":"payroll"}`, map[string]string{"instance": "c"}, KindBinding, ErrSecureNameInArguments},
		{"nested variant", "execute_sql", `{"query":"x","opts":[{"PROJECT-ID":"p"}]}`, map[string]string{"instance": "c"}, KindBinding, ErrSecureNameInArguments},
		{"secure name with a control character", "execute_sql", `{"query":"x","instance\u0000":"payroll"}`, map[string]string{"instance": "c"}, KindBinding, ErrSecureNameInArguments},
		{"secure name with DEL", "execute_sql", `{"query":"x","inst\u007fance":"payroll"}`, map[string]string{"instance": "c"}, KindBinding, ErrSecureNameInArguments},
		{"duplicate key", "echo", `{"text":"a","text":"b"}`, nil, KindToolError, ErrDuplicateKeyInArguments},
		{"duplicate key, escaped and nested", "echo", `{"text":"a","o":[{"k":1,"\u006b":2}]}`, nil, KindToolError, ErrDuplicateKeyInArguments},
		{"required value unbound", "execute_sql", `{"query":"x"}`, nil, KindBinding, nil},
		{"unknown tool", "nope", `{}`, nil, KindUnavailable, ErrToolUnavailable},
		{"arguments not an object", "echo", `[1]`, nil, KindToolError, nil},
		// Valid once trimmed, not as given: the guard validates them
		// itself and refuses them (ErrArgumentsNotJSON).
		{"a form feed after the arguments", "echo", "{\"text\":\"a\"}\f", nil, KindBinding, secureparams.ErrArgumentsNotJSON},
		{"a no-break space before the arguments", "echo", "\u00a0{\"text\":\"a\"}", nil, KindBinding, secureparams.ErrArgumentsNotJSON},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, srv, _ := testHost(t, "", mcptest.Options{})
			s := h.NewSession(SessionOptions{Values: tc.values})
			_, err := s.CallTool(context.Background(), "db", tc.tool, json.RawMessage(tc.args))
			if KindOf(err) != tc.kind {
				t.Fatalf("kind = %v (%v), want %v", KindOf(err), err, tc.kind)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err %v is not %v", err, tc.is)
			}
			var he *Error
			if errors.As(err, &he) && strings.Contains(strings.ToLower(he.ModelMessage), "instance") {
				t.Errorf("model message names a secure field: %q", he.ModelMessage)
			}
			if n := len(toolCalls(t, srv)); n != 0 {
				t.Errorf("%d tools/call sent", n)
			}
		})
	}
}

// Arguments with JSON's own whitespace around them go through the guard on
// the call's check and are sent.
func TestJSONWhitespaceAroundArgumentsIsSent(t *testing.T) {
	h, srv, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{})
	if _, err := s.CallTool(context.Background(), "db", "echo", json.RawMessage(" \t\r\n{\"text\":\"hi\"}\r\n ")); err != nil {
		t.Fatal(err)
	}
	if n := len(toolCalls(t, srv)); n != 1 {
		t.Fatalf("%d tools/call sent, want 1", n)
	}
}

func TestNoSecureArgumentsToPlainTools(t *testing.T) {
	h, srv, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": "c"}})
	if _, err := s.CallTool(context.Background(), "db", "echo", json.RawMessage(`{"text":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	calls := toolCalls(t, srv)
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	if _, ok := calls[0]["secureArguments"]; ok {
		t.Errorf("plain tool got secureArguments: %s", calls[0]["secureArguments"])
	}
}

func TestEchoedSecretIsMasked(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": canary}})
	res, err := s.CallTool(context.Background(), "db", "leaky", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Result)
	if strings.Contains(string(b), canary) {
		t.Fatalf("echoed secret reached the result: %s", b)
	}
	if !strings.Contains(string(b), "[REDACTED]") {
		t.Errorf("expected a redaction marker: %s", b)
	}
}

func TestServerErrorAndReconnect(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{})
	ctx := context.Background()
	_, err := s.CallTool(ctx, "db", "boom", nil)
	if KindOf(err) != KindToolError {
		t.Fatalf("boom: kind %v (%v)", KindOf(err), err)
	}
	if _, err := s.CallTool(ctx, "db", "echo", json.RawMessage(`{"text":"still here"}`)); err != nil {
		t.Fatalf("host did not survive a server error: %v", err)
	}
}

func TestUnreachableServer(t *testing.T) {
	cfg := &config.Config{MCPServers: map[string]*config.Server{
		"gone": {URL: "http://127.0.0.1:1/mcp", Type: config.TransportHTTP, ConnectTimeout: 2 * time.Second},
	}}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.NewSession(SessionOptions{}).CallTool(context.Background(), "gone", "x", nil)
	if KindOf(err) != KindUnavailable || !errors.Is(err, ErrServerUnavailable) {
		t.Fatalf("got %v (%v)", KindOf(err), err)
	}
	if snap := h.Server("gone"); snap.Status != StatusError || snap.Error == "" {
		t.Errorf("snapshot: %+v", snap)
	}
	// Backoff: an immediate second attempt fails fast without dialing.
	start := time.Now()
	_, err = h.NewSession(SessionOptions{}).CallTool(context.Background(), "gone", "x", nil)
	if !errors.Is(err, ErrServerUnavailable) || time.Since(start) > 200*time.Millisecond {
		t.Errorf("second attempt: %v after %s", err, time.Since(start))
	}
}

func TestHiddenWhenUnbindable(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	h.Connect(context.Background())
	without := h.NewSession(SessionOptions{}).View(context.Background())
	with := h.NewSession(SessionOptions{Values: map[string]string{"instance": "c"}}).View(context.Background())
	status := func(v *SessionView, tool string) ToolStatus {
		for _, tv := range v.Tools["db"] {
			if tv.Tool.Name == tool {
				return tv.Status
			}
		}
		return ""
	}
	if status(without, "execute_sql") != ToolHidden {
		t.Errorf("without session value: %s", status(without, "execute_sql"))
	}
	if status(with, "execute_sql") != ToolActive {
		t.Errorf("with session value: %s", status(with, "execute_sql"))
	}
	if _, ok := without.Model.Lookup("db__execute_sql"); ok {
		t.Errorf("hidden tool offered to the model")
	}
	for _, tool := range with.Model.Tools() {
		b, _ := json.Marshal(tool)
		for _, secret := range []string{"project_id", "secureInputSchema", "region"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("model view of %s mentions %q: %s", tool.Name, secret, b)
			}
		}
	}
}

func TestViewIsRebuiltOnlyWhenSomethingChanged(t *testing.T) {
	h, _, _ := testHost(t, "", mcptest.Options{})
	ctx := context.Background()
	h.Connect(ctx)
	s := h.NewSession(SessionOptions{})
	first := s.View(ctx)
	if again := s.View(ctx); again != first {
		t.Errorf("unchanged catalog rebuilt the view")
	}
	if status(first, "execute_sql") != ToolHidden {
		t.Fatalf("execute_sql should be hidden without an instance")
	}
	s.SetValue("instance", "checkout")
	second := s.View(ctx)
	if second == first || status(second, "execute_sql") != ToolActive {
		t.Errorf("a new session value did not re-evaluate the view")
	}
	if err := h.Refresh(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if third := s.View(ctx); third == second {
		t.Errorf("a re-listed server did not rebuild the view")
	}
}

func status(v *SessionView, tool string) ToolStatus {
	for _, tools := range v.Tools {
		for _, tv := range tools {
			if tv.Tool.Name == tool {
				return tv.Status
			}
		}
	}
	return ""
}

func TestRejectedSecureValuesAreResolvedAgainOnce(t *testing.T) {
	url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: []byte(`[
	 {"name": "strict", "x-test": {"errorCode": -32602, "errorMessage": "token expired"},
	  "inputSchema": {"type": "object"},
	  "secureInputSchema": {"type": "object", "properties": {"token": {"type": "string"}}, "required": ["token"]}}]`)})
	var calls atomic.Int32
	vault := bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) {
		n := calls.Add(1)
		return bindings.Resolved{Value: fmt.Sprintf("token-%d-%s", n, canary), Sensitivity: bindings.Secret}, nil
	})
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{"db": {URL: url, Type: config.TransportHTTP}},
		Sources:    map[string]*config.Source{},
		Bindings:   []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{"token": {Source: "vault", Ref: "db/token"}}}},
		Approvals:  readsAllowed(),
	}
	cfg.ApplyDefaults()
	h, err := New(Options{Config: cfg, Sources: map[string]bindings.Source{"vault": vault}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	_, err = h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "strict", nil)
	if KindOf(err) != KindBinding || !errors.Is(err, ErrSecureRejected) {
		t.Fatalf("err = %v (%v)", err, KindOf(err))
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("error leaks the value: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("source called %d times, want 2 (cache dropped after the rejection)", n)
	}
	if n := len(srv.Recording().Messages("tools/call")); n != 2 {
		t.Errorf("%d tools/call, want the call and one retry", n)
	}
}

// A call is sent at most twice: a server that answers unknown tool
// (-32601) for a tool it still lists gets one retry, and any other error
// answer none.
func TestErrorAnswersAreRetriedAtMostOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		calls int
		kind  Kind
	}{
		{"unknown tool, still listed", -32601, 2, KindToolError},
		{"invalid params, no secure values", -32602, 1, KindToolError},
		{"internal error", -32603, 1, KindToolError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, srv := mcptest.StartHTTP(t, mcptest.Options{ToolsJSON: fmt.Appendf(nil, `[
			 {"name": "flaky", "x-test": {"errorCode": %d, "errorMessage": "no"}, "inputSchema": {"type": "object"}}]`, tc.code)})
			cfg := &config.Config{
				MCPServers: map[string]*config.Server{"db": {URL: url, Type: config.TransportHTTP}},
				Approvals:  readsAllowed(),
			}
			cfg.ApplyDefaults()
			h, err := New(Options{Config: cfg})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			_, err = h.NewSession(SessionOptions{}).CallTool(context.Background(), "db", "flaky", nil)
			if KindOf(err) != tc.kind {
				t.Fatalf("err = %v (%v), want kind %s", err, KindOf(err), tc.kind)
			}
			if n := len(srv.Recording().Messages("tools/call")); n != tc.calls {
				t.Errorf("%d tools/call, want %d", n, tc.calls)
			}
		})
	}
}

func TestToolListChangedRefreshesTheCatalog(t *testing.T) {
	dir := t.TempDir()
	next := dir + "/next.json"
	if err := os.WriteFile(next, []byte(`[{"name": "fresh_tool", "inputSchema": {"type": "object"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	first := dir + "/first.json"
	if err := os.WriteFile(first, []byte(`[{"name": "switch", "x-test": {"listChanged": "next.json"}, "inputSchema": {"type": "object"}}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			h, srv, logs := testHost(t, era, mcptest.Options{ToolsFile: first})
			ctx := context.Background()
			h.Connect(ctx)
			if _, err := h.NewSession(SessionOptions{}).CallTool(ctx, "db", "switch", nil); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for h.Server("db").Tool("fresh_tool") == nil {
				if time.Now().After(deadline) {
					t.Fatalf("catalog not refreshed after tools/list_changed: %+v\nlogs:\n%s\nsent: %d notifications", h.Server("db").Tools, logs.String(), len(srv.Recording().Sent("")))
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

func TestChangedValuesAreSentNotThePreparedOnes(t *testing.T) {
	h, srv, _ := testHost(t, "", mcptest.Options{})
	s := h.NewSession(SessionOptions{Values: map[string]string{"instance": "first"}})
	ctx := context.Background()
	for _, want := range []string{"first", "first", "second"} {
		if want == "second" {
			s.SetValue("instance", "second")
		}
		if _, err := s.CallTool(ctx, "db", "execute_sql", json.RawMessage(`{"query":"SELECT 1"}`)); err != nil {
			t.Fatal(err)
		}
		calls := toolCalls(t, srv)
		var secure map[string]any
		_ = json.Unmarshal(calls[len(calls)-1]["secureArguments"], &secure)
		if secure["instance"] != want {
			t.Errorf("sent instance %v, want %s", secure["instance"], want)
		}
	}
}

// Sessions that see a server alike (trust level, names of their session
// values) share its verdicts; any difference in those, or a re-listing,
// gets verdicts of its own.
func TestSessionsShareVerdicts(t *testing.T) {
	ctx := context.Background()
	h, _, _ := testHost(t, "", mcptest.Options{})
	h.Connect(ctx)
	view := func(opts SessionOptions) []*ToolView {
		s := h.NewSession(opts)
		t.Cleanup(s.Close)
		return s.View(ctx).Tools["db"]
	}
	status := func(tools []*ToolView, name string) ToolStatus {
		for _, tv := range tools {
			if tv.Tool.Name == name {
				return tv.Status
			}
		}
		return ""
	}
	first := view(SessionOptions{Values: map[string]string{"instance": "a"}})
	if status(first, "execute_sql") != ToolActive {
		t.Fatalf("execute_sql: %s", status(first, "execute_sql"))
	}
	for _, c := range []struct {
		name   string
		opts   SessionOptions
		shared bool
		sql    ToolStatus
	}{
		{"another value of the same name", SessionOptions{Values: map[string]string{"instance": "b"}}, true, ToolActive},
		{"an empty value", SessionOptions{Values: map[string]string{"instance": ""}}, false, ToolHidden},
		{"no values", SessionOptions{}, false, ToolHidden},
		{"another trust level", SessionOptions{TrustLevel: 5, Values: map[string]string{"instance": "a"}}, false, ToolActive},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := view(c.opts)
			if len(got) != len(first) {
				t.Fatalf("%d tools, want %d", len(got), len(first))
			}
			if shared := got[0] == first[0]; shared != c.shared {
				t.Errorf("verdicts shared = %v, want %v", shared, c.shared)
			}
			if s := status(got, "execute_sql"); s != c.sql {
				t.Errorf("execute_sql: %s, want %s", s, c.sql)
			}
		})
	}
	if err := h.Refresh(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if again := view(SessionOptions{Values: map[string]string{"instance": "a"}}); again[0] == first[0] {
		t.Error("verdicts of a replaced snapshot were reused")
	}
}
