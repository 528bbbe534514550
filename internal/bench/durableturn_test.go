package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
//
// On PostgreSQL, xacts/op is the database transactions per turn (the
// server's count for the turn's database, the engine's background polls
// included), and postgres_floor the CPU of that many bare committed
// INSERTs through a pgx pool, one after the other, per op: what the
// turn's commits cost this process at the least, like for like.
func BenchmarkDurableTurn(b *testing.B) {
	var xactsPerTurn float64
	for _, name := range []string{"memory", "sqlite", "postgres", "postgres_floor"} {
		b.Run(name, func(b *testing.B) {
			if name == "postgres_floor" {
				if xactsPerTurn == 0 {
					b.Fatal("postgres_floor runs after postgres, which counts the transactions of a turn")
				}
				benchCommitsCPU(b, postgresDSN(b), int(xactsPerTurn+0.5))
				return
			}
			dsn := ""
			switch name {
			case "sqlite":
				dsn = "sqlite:" + filepath.Join(b.TempDir(), "durable.db")
			case "postgres":
				dsn = postgresDSN(b)
			}
			h := newTurnHost(b, dsn)
			var xacts func() int64
			if name == "postgres" {
				xacts = xactCounter(b, dsn)
			}
			var x0 int64
			if xacts != nil {
				x0 = xacts()
			}
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
			if xacts != nil {
				b.StopTimer()
				xactsPerTurn = float64(xacts()-x0) / float64(b.N)
				b.ReportMetric(xactsPerTurn, "xacts/op")
			}
		})
	}
}

// newTurnHost is the benchmark's host: in memory (dsn ""), or durable on
// dsn. Closed with the benchmark.
func newTurnHost(b *testing.B, dsn string) *host.Host {
	b.Helper()
	srv, err := mcptest.New(mcptest.Options{ToolsJSON: []byte(`[{"name": "lookup", "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
	  "annotations": {"category": "read", "riskLevel": "low", "blastRadius": "item", "reversibility": "auto", "approvalRecommendation": "none", "minTrustLevel": 1}}]`),
		Handler: func(context.Context, string, map[string]json.RawMessage, map[string]json.RawMessage) (string, bool) {
			return "order 7: shipped", false
		}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	cfg := &config.Config{MCPServers: map[string]*config.Server{"db": {TrustAnnotations: true}},
		Approvals: rules.Config{Rules: []rules.Rule{{ID: "reads", When: rules.Match{Category: []string{"read"}}, Decide: "allow"}}}}
	cfg.ApplyDefaults()
	opts := host.Options{Config: cfg, Model: lookupModel{}, ModelName: "bench",
		Transports: map[string]host.TransportFactory{"db": func() (transport.Interface, error) { return srv.InProcessTransport(), nil }}}
	if dsn != "" {
		e, err := durable.Open(context.Background(), dsn, durable.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = e.Close() })
		opts.Durability = e
	}
	h, err := host.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = h.Close() })
	return h
}

// xactCounter reads the server's count of transactions committed and
// rolled back in dsn's database, after every backend's statistics were
// flushed (they flush at most once a second; the counter's own two
// transactions are taken off).
func xactCounter(b *testing.B, dsn string) func() int64 {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close(ctx) })
	return func() int64 {
		time.Sleep(1500 * time.Millisecond)
		var n int64
		if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			b.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`).Scan(&n); err != nil {
			b.Fatal(err)
		}
		return n - 2
	}
}

// benchCommitsCPU reports the CPU of n bare committed INSERTs per op
// through a pgx pool.
func benchCommitsCPU(b *testing.B, dsn string, n int) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `CREATE TABLE commits (id BIGSERIAL PRIMARY KEY, body TEXT)`); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	began := cpuTime()
	for b.Loop() {
		for range n {
			if _, err := pool.Exec(ctx, `INSERT INTO commits (body) VALUES ($1)`, "a step's output"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(n), "xacts/op")
}
