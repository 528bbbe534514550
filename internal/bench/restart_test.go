package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/durable"
)

// restartSessions is how many sessions BenchmarkDurableRestart leaves
// with an unfinished turn (ids of the form the host gives them).
const restartSessions = 1000

// BenchmarkDurableRestart: 1,000 sessions each have an unfinished turn
// (one checkpointed step, then waiting, as a turn waits for an approval)
// when the process stops. One op is a restart: the engine opens, starts
// and takes the 1,000 turns up, and every session's unfinished turn is
// listed (what Session.Resume asks first). s/restart is the figure (target
// ≤ 5 s); list-s is the listing's part of it, and list-cpu-ms/session this
// process's CPU per session listed (the database server's not counted).
func BenchmarkDurableRestart(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			dsn := "sqlite:" + filepath.Join(b.TempDir(), "durable.db")
			if name == "postgres" {
				dsn = postgresDSN(b)
			}
			ctx := context.Background()
			// The turns, left unfinished by a first process.
			e, running := startWaitingEngine(b, dsn)
			var wg sync.WaitGroup
			for i := range restartSessions {
				wg.Go(func() {
					_ = e.RunTurn(ctx, fmt.Sprintf("s%04d.%016x.%08x", i, i, i), host.TurnRecord{SessionID: fmt.Sprintf("s%04d", i)})
				})
			}
			waitCount(b, running, restartSessions)
			_ = e.Close()
			wg.Wait()

			var restart, list, listCPU time.Duration
			for b.Loop() {
				began := time.Now()
				e, running := startWaitingEngine(b, dsn)
				waitCount(b, running, restartSessions)
				listed, cpu := time.Now(), cpuTime()
				for i := range restartSessions {
					ids, err := e.PendingTurns(ctx, fmt.Sprintf("s%04d", i))
					if err != nil || len(ids) != 1 {
						b.Fatalf("session %d: pending %v, %v", i, ids, err)
					}
				}
				restart += time.Since(began)
				list += time.Since(listed)
				listCPU += cpuTime() - cpu
				_ = e.Close()
			}
			b.ReportMetric(restart.Seconds()/float64(b.N), "s/restart")
			b.ReportMetric(list.Seconds()/float64(b.N), "list-s")
			b.ReportMetric(float64(listCPU.Microseconds())/1e3/float64(b.N*restartSessions), "list-cpu-ms/session")
		})
	}
}

// startWaitingEngine opens and starts an engine whose turns checkpoint a
// step and then wait until the engine stops; running counts the turns
// that got that far.
func startWaitingEngine(b *testing.B, dsn string) (*durable.Engine, *atomic.Int64) {
	b.Helper()
	e, err := durable.Open(context.Background(), dsn, durable.Options{ExecutorID: "bench-restart", ShutdownTimeout: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	running := new(atomic.Int64)
	if err := e.Start(func(ctx context.Context, steps host.Steps, _ host.TurnRecord) error {
		if _, _, err := steps.Step(ctx, "load", func(context.Context) (json.RawMessage, error) { return json.RawMessage("0"), nil }); err != nil {
			return err
		}
		running.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}); err != nil {
		b.Fatal(err)
	}
	return e, running
}

func waitCount(b *testing.B, n *atomic.Int64, want int64) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for n.Load() < want {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d turns running after 5 minutes", n.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
