package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
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
//   - postgres: loopback, fsync on, a call's step ("tool"), whose
//     checkpoint does not wait for the WAL flush: the send ledger's row,
//     flushed before the call leaves, covers its loss (host/durable's
//     commit.go). p50-ms is the figure (target ≤ 1 ms).
//   - postgres_model: the same for a model step ("model"), whose
//     checkpoint is flushed before the step returns.
//   - postgres_async: durable.Options.AsyncCommit (no checkpoint waits
//     for the WAL flush; the send ledger still does).
//   - postgres_commit: one bare INSERT committed, for reference: the
//     floor a flushed checkpoint cannot go under on this machine.
//   - sqlite: WAL, synchronous=NORMAL (target ≤ 0.3 ms).
//   - sqlite_commit: one bare INSERT committed on a file opened as the
//     engine opens it, for reference: SQLite's floor, like for like.
//
// cpu-µs/op is this process's CPU per step (per commit for the floors):
// the engine's own cost per step beside a bare commit's.
func BenchmarkCheckpointStep(b *testing.B) {
	for _, name := range []string{"postgres", "postgres_model", "postgres_async", "postgres_commit", "sqlite", "sqlite_commit"} {
		b.Run(name, func(b *testing.B) {
			dsn := "sqlite:" + filepath.Join(b.TempDir(), "durable.db")
			if !strings.HasPrefix(name, "sqlite") {
				dsn = postgresDSN(b)
			}
			switch name {
			case "postgres_commit":
				benchBareCommit(b, dsn)
				return
			case "sqlite_commit":
				benchBareSQLiteCommit(b, strings.TrimPrefix(dsn, "sqlite:"))
				return
			}
			e, err := durable.Open(context.Background(), dsn, durable.Options{AsyncCommit: name == "postgres_async"})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			out := json.RawMessage(`{"text":"a tool's result, as the model is told it","failed":false}`)
			step := "tool"
			if name == "postgres_model" {
				step = "model"
			}
			latencies := make([]time.Duration, 0, b.N)
			var cpu time.Duration
			if err := e.Start(func(ctx context.Context, steps host.Steps, _ host.TurnRecord) error {
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				defer func() { cpu = cpuTime() - cpu0 }()
				for b.Loop() {
					began := time.Now()
					if _, _, err := steps.Step(ctx, step, func(context.Context) (json.RawMessage, error) { return out, nil }); err != nil {
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
			reportLatencies(b, latencies)
			reportCPU(b, cpu)
		})
	}
}

// benchBareSQLiteCommit times one INSERT per op, each its own
// transaction, on a file opened with the engine's settings (WAL,
// synchronous=NORMAL, immediate transactions: host/durable's openSQLite).
func benchBareSQLiteCommit(b *testing.B, path string) {
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=journal_mode(WAL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE commits (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		b.Fatal(err)
	}
	insert, err := db.Prepare(`INSERT INTO commits (body) VALUES (?)`)
	if err != nil {
		b.Fatal(err)
	}
	latencies := make([]time.Duration, 0, b.N)
	cpu0 := cpuTime()
	for b.Loop() {
		began := time.Now()
		if _, err := insert.Exec("a tool's result"); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(began))
	}
	reportCPU(b, cpuTime()-cpu0)
	reportLatencies(b, latencies)
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
	cpu0 := cpuTime()
	for b.Loop() {
		began := time.Now()
		if _, err := conn.Exec(ctx, `INSERT INTO commits (body) VALUES ($1)`, "a tool's result"); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(began))
	}
	reportCPU(b, cpuTime()-cpu0)
	reportLatencies(b, latencies)
}

// reportCPU reports this process's CPU per op (cpu), in µs: the engine's
// step beside the bare commit's.
func reportCPU(b *testing.B, cpu time.Duration) {
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
}

// reportLatencies reports the p50 and p99 of latencies, in ms.
func reportLatencies(b *testing.B, latencies []time.Duration) {
	slices.Sort(latencies)
	b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e6, "p99-ms")
}
