package otelobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
	"github.com/agenthost/agenthost/host/otelobs"
	"github.com/agenthost/agenthost/host/otelobs/otlptest"
)

// Canary values: every kind of protected value a turn handles. None may
// reach the receiver.
const (
	canaryLiteral   = "CANARY-literal-5b1e"
	canaryEnv       = "CANARY-env-77c2"
	canaryFile      = "CANARY-file-0d9a"
	canarySession   = "CANARY-session-a4f0"
	canaryUnbound   = "CANARY-unbound-session-3e3e"
	canarySource    = "CANARY-source-c81b"
	canaryRef       = "CANARY-ref-91aa"
	canaryInjection = "CANARY-injected-instance-2f6d"
	canaryArgs      = "CANARY-args-6a6a"
	canaryPrompt    = "CANARY-prompt-1c1c"
	canaryAnswer    = "CANARY-answer-e0e0"
)

var allCanaries = []string{canaryLiteral, canaryEnv, canaryFile, canarySession, canaryUnbound, canarySource,
	canaryRef, canaryInjection, canaryArgs, canaryPrompt, canaryAnswer}

const toolsJSON = `[
 {"name": "execute_sql", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
  "secureInputSchema": {"type": "object", "properties": {
     "project_id": {"type": "string"}, "region": {"type": "string"}, "token": {"type": "string"},
     "instance": {"type": "string"}, "vault_token": {"type": "string"}},
   "required": ["project_id", "region", "token", "instance", "vault_token"]},
  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`

// scriptedModel asks for a call that names a secure parameter (refused),
// then a proper call, then answers.
func scriptedModel(requests *atomic.Int32) model.LLM {
	return model.Func(func(_ context.Context, req *model.Request) (model.Message, model.Usage, error) {
		n := requests.Add(1)
		usage := model.Usage{PromptTokens: 10 * int(n), CompletionTokens: int(n), TotalTokens: 11 * int(n)}
		switch n {
		case 1:
			return model.Message{ToolCalls: []model.ToolCall{{ID: "call_inject", Name: "db__execute_sql",
				Arguments: `{"query": "SELECT 1", "instance": "` + canaryInjection + `"}`}}}, usage, nil
		case 2:
			return model.Message{ToolCalls: []model.ToolCall{{ID: "call_ok", Name: "db__execute_sql",
				Arguments: `{"query": "SELECT '` + canaryArgs + `'"}`}}}, usage, nil
		default:
			return model.Message{Content: "done " + canaryAnswer}, usage, nil
		}
	})
}

type harness struct {
	recv *otlptest.Receiver
	srv  *mcptest.Server
	tel  *otelobs.Telemetry
	h    *host.Host
}

func newHarness(t *testing.T, protocol string) *harness {
	t.Helper()
	recv := otlptest.Start(t)
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(toolsJSON),
		Handler: func(_ context.Context, tool string, _, secure map[string]json.RawMessage) (string, bool) {
			return fmt.Sprintf("%s ran with %d secure values", tool, len(secure)), false
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.HTTPHandler())
	t.Cleanup(func() { _ = srv.Close(); ts.Close() })

	tokenFile := filepath.Join(t.TempDir(), "token.txt")
	if err := os.WriteFile(tokenFile, []byte(canaryFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OTELOBS_TEST_REGION", canaryEnv)
	cfg := &config.Config{
		LLM:        config.LLM{Model: "test-model"},
		MCPServers: map[string]*config.Server{"db": {URL: ts.URL + "/mcp"}},
		Bindings: []config.Binding{{Server: "db", Params: map[string]config.ParamBinding{
			"project_id":  {Value: canaryLiteral},
			"region":      {Env: "OTELOBS_TEST_REGION"},
			"token":       {File: tokenFile},
			"instance":    {Session: "instance"},
			"vault_token": {Source: "vault", Ref: "orders/" + canaryRef},
		}}},
		Approvals: rules.Config{Catalogue: []rules.CatalogueEntry{{Server: "db", Tool: "execute_sql",
			Metadata: risk.RawMetadata{Category: ptr("read"), RiskLevel: ptr("low"), BlastRadius: ptr("item"),
				Reversibility: ptr("auto"), ApprovalRecommendation: ptr("none"), MinTrustLevel: 1}}},
			Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}},
		Observability: config.Observability{Enabled: true, Protocol: protocol},
	}
	cfg.ApplyDefaults()
	endpoint := recv.URL
	if protocol == config.OTLPProtocolGRPC {
		endpoint = recv.GRPCAddr
	}
	cfg.Observability.Endpoint = endpoint

	tel, err := otelobs.Setup(t.Context(), cfg.Observability, otelobs.SetupOptions{ServiceVersion: "test",
		LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if tel == nil {
		t.Fatal("Setup returned no telemetry for an enabled section")
	}
	var requests atomic.Int32
	vault := bindings.SourceFunc(func(context.Context, bindings.Request) (bindings.Resolved, error) {
		return bindings.Resolved{Value: canarySource, Sensitivity: bindings.Secret, Expiry: time.Now().Add(time.Hour)}, nil
	})
	h, err := host.New(host.Options{Config: cfg, Model: scriptedModel(&requests), ModelName: "test-model",
		Sources: map[string]bindings.Source{"vault": vault}, Observer: tel.Observer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return &harness{recv: recv, srv: srv, tel: tel, h: h}
}

// run runs one turn (with an incoming trace context) and flushes.
func (x *harness) run(t *testing.T, traceparent string) {
	t.Helper()
	s := x.h.NewSession(host.SessionOptions{ID: "sess-1", Values: map[string]string{"instance": canarySession, "unused": canaryUnbound}})
	var end host.Event
	for e := range s.Turn(t.Context(), "look it up "+canaryPrompt, host.TurnOptions{TraceParent: traceparent}) {
		end = e
	}
	if end.Type != host.EventSessionEnd || end.Reason != host.EndDone {
		t.Fatalf("turn ended with %+v", end)
	}
	// A second call of the same tool in the same session: the plugin-like
	// source is answered from the cache.
	if _, err := s.CallTool(t.Context(), "db", "execute_sql", json.RawMessage(`{"query":"SELECT 2"}`)); err != nil {
		t.Fatal(err)
	}
	if err := x.tel.Shutdown(t.Context()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

const incomingTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
const incomingParent = "00f067aa0ba902b7"

func TestTurnSpanTreeOnTheWire(t *testing.T) {
	for _, protocol := range []string{config.OTLPProtocolHTTP, config.OTLPProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			x := newHarness(t, protocol)
			x.run(t, "00-"+incomingTrace+"-"+incomingParent+"-01")
			spans := x.recv.Spans()
			if len(spans) == 0 {
				t.Fatalf("the receiver got no spans (paths %v)", x.recv.Paths())
			}
			byName := map[string][]otlptest.Span{}
			byID := map[string]otlptest.Span{}
			for _, s := range spans {
				byName[s.Name] = append(byName[s.Name], s)
				byID[s.SpanID] = s
			}
			one := func(name string) otlptest.Span {
				t.Helper()
				if len(byName[name]) == 0 {
					names := make([]string, 0, len(spans))
					for _, s := range spans {
						names = append(names, s.Name)
					}
					t.Fatalf("no span %q; got %v", name, names)
				}
				return byName[name][0]
			}
			turn := one("invoke_agent agenthost")
			if turn.TraceID != incomingTrace || turn.ParentID != incomingParent {
				t.Errorf("turn: trace %s parent %s, want the incoming %s / %s", turn.TraceID, turn.ParentID, incomingTrace, incomingParent)
			}
			wantAttrs(t, turn, map[string]string{"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "sess-1",
				"agenthost.turn.end_reason": "done", "agenthost.turn.steps": "3", "gen_ai.usage.input_tokens": "60"})
			if turn.Resource["service.name"] != "agenthost" || turn.Resource["service.version"] != "test" {
				t.Errorf("resource %v", turn.Resource)
			}

			chats := byName["chat test-model"]
			if len(chats) != 3 {
				t.Fatalf("%d chat spans, want 3", len(chats))
			}
			for _, c := range chats {
				if c.ParentID != turn.SpanID || c.Kind.String() != "SPAN_KIND_CLIENT" {
					t.Errorf("chat span parent %s kind %s, want child of the turn, CLIENT", c.ParentID, c.Kind)
				}
				wantAttrs(t, c, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model", "gen_ai.provider.name": "openai"})
			}

			tools := byName["execute_tool execute_sql"]
			if len(tools) != 3 { // refused injection, the turn's call, the direct call
				t.Fatalf("%d execute_tool spans, want 3", len(tools))
			}
			var refused, ran []otlptest.Span
			for _, s := range tools {
				wantAttrs(t, s, map[string]string{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "execute_sql",
					"mcp.method.name": "tools/call", "agenthost.mcp.server": "db"})
				if s.Attrs["error.type"] != "" {
					refused = append(refused, s)
				} else {
					ran = append(ran, s)
				}
			}
			if len(refused) != 1 || refused[0].Attrs["error.type"] != "binding" || !refused[0].StatusError || refused[0].ParentID != turn.SpanID {
				t.Fatalf("refused call spans: %+v", refused)
			}
			inTurn := ran[0]
			if inTurn.ParentID != turn.SpanID {
				inTurn = ran[1]
			}
			if inTurn.ParentID != turn.SpanID || inTurn.Attrs["gen_ai.tool.call.id"] != "call_ok" {
				t.Fatalf("the turn's tool call span: %+v", inTurn)
			}
			if len(inTurn.Events) != 1 || inTurn.Events[0].Name != "agenthost.approval" {
				t.Fatalf("tool call events %+v, want one agenthost.approval", inTurn.Events)
			}
			ev := inTurn.Events[0].Attrs
			for k, v := range map[string]string{"agenthost.approval.decision": "allow", "agenthost.approval.outcome": "auto_allowed",
				"agenthost.approval.rules": "[reads]", "agenthost.approval.approvers_required": "0",
				"agenthost.risk.category": "read", "agenthost.risk.category.source": "catalogue"} {
				if ev[k] != v {
					t.Errorf("approval event %s = %q, want %q (all: %v)", k, ev[k], v, ev)
				}
			}

			var creds, mcps []otlptest.Span
			for _, s := range spans {
				switch {
				case strings.HasPrefix(s.Name, "resolve_credential ") && s.ParentID == inTurn.SpanID:
					creds = append(creds, s)
				case s.Name == "tools/call execute_sql" && s.ParentID == inTurn.SpanID:
					mcps = append(mcps, s)
				}
			}
			sources := map[string]string{}
			for _, c := range creds {
				sources[c.Attrs["agenthost.credential.param"]] = c.Attrs["agenthost.credential.source"] + "/" + c.Attrs["agenthost.credential.cache"]
			}
			wantSources := map[string]string{"project_id": "value/bypass", "region": "env/bypass", "token": "file/bypass",
				"instance": "session/bypass", "vault_token": "vault/miss"}
			for p, want := range wantSources {
				if sources[p] != want {
					t.Errorf("credential span of %s: %q, want %q (all %v)", p, sources[p], want, sources)
				}
			}
			if len(mcps) != 1 {
				t.Fatalf("%d MCP request spans under the turn's tool call, want 1", len(mcps))
			}
			m := mcps[0]
			if m.Kind.String() != "SPAN_KIND_CLIENT" {
				t.Errorf("MCP span kind %s", m.Kind)
			}
			wantAttrs(t, m, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "execute_sql",
				"network.transport": "tcp", "mcp.protocol.version": m.Attrs["mcp.protocol.version"]})
			if m.Attrs["mcp.protocol.version"] == "" {
				t.Errorf("MCP span lacks mcp.protocol.version: %v", m.Attrs)
			}

			// The direct call's vault value came from the cache.
			direct := ran[0]
			if direct.SpanID == inTurn.SpanID {
				direct = ran[1]
			}
			if direct.ParentID != "" {
				t.Errorf("the direct call's span has a parent %s", direct.ParentID)
			}
			hit := false
			for _, s := range spans {
				if s.ParentID == direct.SpanID && s.Attrs["agenthost.credential.param"] == "vault_token" {
					hit = s.Attrs["agenthost.credential.cache"] == "hit"
				}
			}
			if !hit {
				t.Error("the second call's vault_token resolution is not a cache hit")
			}

			// The server received the MCP span's context in params._meta.
			calls := x.srv.Recording().Messages("tools/call")
			found := false
			for _, c := range calls {
				var meta map[string]json.RawMessage
				_ = json.Unmarshal(c.Params()["_meta"], &meta)
				var tp string
				_ = json.Unmarshal(meta["traceparent"], &tp)
				if tp == "00-"+m.TraceID+"-"+m.SpanID+"-01" {
					found = true
				}
			}
			if !found {
				t.Errorf("no tools/call carried the MCP span's traceparent in _meta (span %s/%s)", m.TraceID, m.SpanID)
			}

			metrics := strings.Join(x.recv.MetricNames(), " ")
			for _, name := range []string{"agenthost.tool.calls", "agenthost.approval.decisions", "agenthost.credential.resolutions",
				"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "mcp.client.operation.duration"} {
				if !strings.Contains(metrics, name) {
					t.Errorf("metric %s not received (got %s)", name, metrics)
				}
			}
			for _, attrs := range x.recv.MetricAttrs("agenthost.credential.resolutions") {
				if strings.Contains(attrs, "param") || strings.Contains(attrs, "tool") {
					t.Errorf("credential metric has a high-cardinality attribute: %s", attrs)
				}
			}

			raw := x.recv.Raw()
			if !strings.Contains(string(raw), "execute_tool execute_sql") {
				t.Fatal("the raw bytes the receiver kept do not hold the spans; the canary scan would prove nothing")
			}
			for _, c := range allCanaries {
				if strings.Contains(string(raw), c) {
					t.Errorf("the receiver got the canary %s", c)
				}
			}
		})
	}
}

func wantAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if s.Attrs[k] != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, s.Attrs[k], v)
		}
	}
}

func ptr(s string) *string { return &s }
