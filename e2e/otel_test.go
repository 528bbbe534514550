//go:build unix

package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/otelobs/otlptest"
)

const (
	otelIncomingTrace  = "0af7651916cd43dd8448eb211c80319c"
	otelIncomingParent = "b7ad6b7169203331"
)

// TestOtelRunExportsTheTurnTree: `agenthost run` with
// OTEL_EXPORTER_OTLP_ENDPOINT set sends, to a loopback OTLP receiver (HTTP
// and gRPC), one trace per turn: the turn (continuing TRACEPARENT) with its
// model requests and tool calls as children, each tool call with its
// approval event, its credential resolutions (plugins included) and its
// MCP request; the server gets the MCP request's trace context in
// params._meta and the model endpoint the model request's in headers. The
// run uses a value from every kind of binding and two plugins, and no byte
// the receiver got holds any of them, nor the model's API key.
func TestOtelRunExportsTheTurnTree(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			recv := otlptest.Start(t)
			endpoint := recv.URL
			if protocol == "grpc" {
				endpoint = recv.GRPCAddr
			}
			l := ftNewLeakSetup(t)
			model := ftStartModel(t, ftLeakScript())
			cfg, _ := l.config(t, model)
			env := append(append([]string(nil), l.env...),
				"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL="+protocol,
				"TRACEPARENT=00-"+otelIncomingTrace+"-"+otelIncomingParent+"-01")
			args := append([]string{"--config", cfg, "--log-level", "debug", "run", "use every tool", "--output-format", "agenthost-stream-json"}, l.bind...)
			r := runWithTimeout(t, 60*time.Second, env, args...)
			wantCode(t, r, 0)
			l.wantClean(t, r)
			l.wantDelivered(t)

			spans := recv.Spans()
			var turns, chats, tools, creds, mcps []otlptest.Span
			for _, s := range spans {
				switch {
				case s.Name == "invoke_agent agenthost":
					turns = append(turns, s)
				case strings.HasPrefix(s.Name, "chat "):
					chats = append(chats, s)
				case strings.HasPrefix(s.Name, "execute_tool "):
					tools = append(tools, s)
				case strings.HasPrefix(s.Name, "resolve_credential "):
					creds = append(creds, s)
				case strings.HasPrefix(s.Name, "tools/call "):
					mcps = append(mcps, s)
				}
			}
			if len(turns) != 1 {
				t.Fatalf("%d turn spans, want 1 (got %d spans at %v)\n%s", len(turns), len(spans), recv.Paths(), r)
			}
			turn := turns[0]
			if turn.TraceID != otelIncomingTrace || turn.ParentID != otelIncomingParent {
				t.Errorf("the turn is not parented on TRACEPARENT: trace %s parent %s", turn.TraceID, turn.ParentID)
			}
			if turn.Attrs["agenthost.turn.end_reason"] != "done" || turn.Attrs["agenthost.turn.steps"] != "8" {
				t.Errorf("turn attributes %v", turn.Attrs)
			}
			if len(chats) != 8 {
				t.Errorf("%d model request spans, want 8", len(chats))
			}
			for _, c := range chats {
				if c.ParentID != turn.SpanID || c.Attrs["gen_ai.request.model"] != model.llm()["model"] || c.Attrs["gen_ai.operation.name"] != "chat" {
					t.Errorf("model request span %s: parent %s, attrs %v", c.Name, c.ParentID, c.Attrs)
				}
				if c.Attrs["gen_ai.response.finish_reasons"] == "" {
					t.Errorf("model request span without finish reasons: %v", c.Attrs)
				}
			}
			// Eight scripted calls (one step has two).
			if len(tools) != 8 {
				t.Errorf("%d tool call spans, want 8", len(tools))
			}
			toolIDs := map[string]otlptest.Span{}
			for _, s := range tools {
				toolIDs[s.SpanID] = s
				if s.ParentID != turn.SpanID || s.Attrs["gen_ai.operation.name"] != "execute_tool" || s.Attrs["mcp.method.name"] != "tools/call" {
					t.Errorf("tool call span %s: parent %s, attrs %v", s.Name, s.ParentID, s.Attrs)
				}
			}
			approvalsSeen := 0
			for _, s := range tools {
				for _, e := range s.Events {
					if e.Name == "agenthost.approval" && e.Attrs["agenthost.approval.decision"] != "" && e.Attrs["agenthost.risk.category.source"] != "" {
						approvalsSeen++
					}
				}
			}
			if approvalsSeen == 0 {
				t.Error("no tool call span carries an approval event")
			}
			pluginCreds := map[string]bool{}
			for _, c := range creds {
				if _, ok := toolIDs[c.ParentID]; !ok {
					t.Errorf("credential span %s is not a tool call's child", c.Name)
				}
				if src := c.Attrs["agenthost.credential.source"]; src == "vaultfile" || src == "vaultexec" {
					pluginCreds[src] = true
				}
			}
			if !pluginCreds["vaultfile"] || !pluginCreds["vaultexec"] {
				t.Errorf("plugin credential resolutions seen: %v, want vaultfile and vaultexec", pluginCreds)
			}
			mcpIDs := map[string]bool{}
			for _, m := range mcps {
				if _, ok := toolIDs[m.ParentID]; !ok {
					t.Errorf("MCP request span %s is not a tool call's child", m.Name)
				}
				if m.Kind.String() != "SPAN_KIND_CLIENT" || m.Attrs["network.transport"] != "pipe" || m.Attrs["mcp.protocol.version"] == "" {
					t.Errorf("MCP request span %s: kind %s attrs %v", m.Name, m.Kind, m.Attrs)
				}
				mcpIDs["00-"+m.TraceID+"-"+m.SpanID+"-01"] = true
			}
			if len(mcps) == 0 {
				t.Fatal("no MCP request spans")
			}

			// Propagation: every tools/call the server got carries an MCP
			// request span's context; every model request a chat span's.
			calls, _ := ftToolCalls(t, l.record)
			if len(calls) == 0 {
				t.Fatal("the server recorded no tools/call")
			}
			for _, c := range calls {
				var tp string
				_ = json.Unmarshal(metaOf(c)["traceparent"], &tp)
				if !mcpIDs[tp] {
					t.Errorf("a tools/call carried traceparent %q in _meta, not an MCP request span's", tp)
				}
			}
			chatIDs := map[string]bool{}
			for _, c := range chats {
				chatIDs["00-"+c.TraceID+"-"+c.SpanID+"-01"] = true
			}
			for _, req := range model.recording(t) {
				if tp := req.Header.Get("Traceparent"); !chatIDs[tp] {
					t.Errorf("a model request carried traceparent %q, not a model request span's", tp)
				}
			}

			metrics := strings.Join(recv.MetricNames(), " ")
			for _, name := range []string{"agenthost.tool.calls", "agenthost.approval.decisions", "agenthost.credential.resolutions",
				"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "mcp.client.operation.duration"} {
				if !strings.Contains(metrics, name) {
					t.Errorf("metric %s not received (got %s)", name, metrics)
				}
			}

			raw := string(recv.Raw())
			if !strings.Contains(raw, "execute_tool") {
				t.Fatal("the receiver's raw bytes hold no span: the canary scan would prove nothing")
			}
			ftWantAbsent(t, "the telemetry the receiver got", raw, l.canaries)
		})
	}
}
