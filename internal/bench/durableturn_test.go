package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
	"github.com/agenthost/agenthost/host/mcptest"
	"github.com/agenthost/agenthost/host/model"
)

// lookupModel asks for one lookup, then answers with its result.
type lookupModel struct{}

func (lookupModel) Generate(_ context.Context, req *model.Request) iter.Seq2[*model.Response, error] {
	msg := model.Message{Role: model.RoleAssistant, Content: "Done."}
	if req.Messages[len(req.Messages)-1].Role == model.RoleUser {
		msg = model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "db__lookup", Arguments: `{"id":"7"}`}}}
	}
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Message: msg, Usage: model.Usage{TotalTokens: 3}}, nil)
	}
}

// BenchmarkDurableTurn: one turn of two model steps and one tool call (an
// in-process server and model, so the host's own work is what is
// measured), in memory and durable. cpu-ns/op is this process's CPU per
// turn; the durable figure over the memory one is the overhead (target
// ≤ 1.5×). The database server's own CPU (PostgreSQL) is not counted.
func BenchmarkDurableTurn(b *testing.B) {
	for _, name := range []string{"memory", "sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
			  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`),
				Handler: func(context.Context, string, map[string]json.RawMessage, map[string]json.RawMessage) (string, bool) {
					return "order 7: shipped", false
				}})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Close()
			cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {TrustAnnotations: true}},
				Approvals: rules.Config{Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}}}
			cfg.ApplyDefaults()
			opts := host.Options{Config: cfg, Model: lookupModel{}, ModelName: "bench",
				Transports: map[string]host.TransportFactory{"db": func() (transport.Interface, error) { return srv.InProcessTransport(), nil }}}
			if name != "memory" {
				dsn := "sqlite:" + filepath.Join(b.TempDir(), "durable.db")
				if name == "postgres" {
					dsn = postgresDSN(b)
				}
				e, err := durable.Open(context.Background(), dsn, durable.Options{})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				opts.Durability = e
			}
			h, err := host.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			began := cpuTime()
			for b.Loop() {
				i++
				s := h.NewSession(host.SessionOptions{ID: fmt.Sprintf("bench-%d", i)})
				for e := range s.Turn(context.Background(), "look up order 7", host.TurnOptions{}) {
					if e.Type == host.EventSessionEnd && e.Reason != host.EndDone {
						b.Fatalf("turn ended %s", e.Reason)
					}
				}
				s.Close()
			}
			b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
