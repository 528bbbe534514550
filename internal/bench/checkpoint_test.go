package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
)

// BenchmarkCheckpointStep: the engine's overhead for one step of a
// durable turn: a step whose work is nothing, run through host.Steps
// (DBOS RunAsStep: look up the step's checkpoint, run, record the
// output), one after the other within one turn, as a turn's steps run.
//
//   - postgres: loopback, fsync on, each checkpoint flushed before the
//     step returns. p50-ms is the figure (target ≤ 1 ms).
//   - postgres_async: durable.Options.AsyncCommit (checkpoints not
//     waiting for the WAL flush; the send ledger still does).
//   - postgres_commit: one bare INSERT committed, for reference: the
//     floor a flushed checkpoint cannot go under on this machine.
//   - sqlite: WAL, synchronous=NORMAL (target ≤ 0.3 ms).
func BenchmarkCheckpointStep(b *testing.B) {
	for _, name := range []string{"postgres", "postgres_async", "postgres_commit", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			dsn := "sqlite:" + filepath.Join(b.TempDir(), "durable.db")
			if name != "sqlite" {
				dsn = postgresDSN(b)
			}
			if name == "postgres_commit" {
				benchBareCommit(b, dsn)
				return
			}
			e, err := durable.Open(context.Background(), dsn, durable.Options{AsyncCommit: name == "postgres_async"})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			out := json.RawMessage(`{"text":"a tool's result, as the model is told it","failed":false}`)
			latencies := make([]time.Duration, 0, b.N)
			if err := e.Start(func(ctx context.Context, steps host.Steps, _ host.TurnRecord) error {
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					began := time.Now()
					if _, _, err := steps.Step(ctx, "tool", func(context.Context) (json.RawMessage, error) { return out, nil }); err != nil {
						return err
					}
					latencies = append(latencies, time.Since(began))
				}
				b.StopTimer()
				return nil
			}); err != nil {
				b.Fatal(err)
			}
			if err := e.RunTurn(context.Background(), "bench.1", host.TurnRecord{SessionID: "bench"}); err != nil {
				b.Fatal(err)
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e6, "p50-ms")
			b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e6, "p99-ms")
		})
	}
}

// benchBareCommit times one INSERT per op, each its own transaction.
func benchBareCommit(b *testing.B, dsn string) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE commits (id BIGSERIAL PRIMARY KEY, body TEXT)`); err != nil {
		b.Fatal(err)
	}
	latencies := make([]time.Duration, 0, b.N)
	for b.Loop() {
		began := time.Now()
		if _, err := conn.Exec(ctx, `INSERT INTO commits (body) VALUES ($1)`, "a tool's result"); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(began))
	}
	slices.Sort(latencies)
	b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e6, "p99-ms")
}
