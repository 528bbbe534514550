package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/pgstore"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/approvals/sqlitestore"
	"github.com/agenthost/agenthost/internal/pgtest"
)

// postgres is the suite's throwaway PostgreSQL cluster (fsync on, as in
// production), started on first use and stopped by TestMain.
var postgres struct {
	once    sync.Once
	cluster *pgtest.Cluster
	err     error
}

func postgresDSN(b *testing.B) string {
	b.Helper()
	postgres.once.Do(func() { postgres.cluster, postgres.err = pgtest.StartClusterWith(pgtest.Options{Durable: true}) })
	if postgres.err != nil {
		b.Fatalf("start PostgreSQL: %v", postgres.err)
	}
	return postgres.cluster.NewDatabase(b)
}

func stopPostgres() {
	if postgres.cluster != nil {
		_ = postgres.cluster.Stop()
	}
}

// BenchmarkApprovalRoundTrip: one ask from raise to wake. Replica A raises
// the request (StoreApprover) and waits; replica B, told the id, votes;
// the op ends when A's waiter returns with the verdict.
//
//   - memory: the in-memory Queue (one process), for reference.
//   - postgres: two pgstore handles on one loopback database; A wakes on
//     LISTEN/NOTIFY. p50-ms is the figure (target ≤ 5 ms).
//   - sqlite: two sqlitestore handles on one file; the other handle's
//     vote is seen by A's poll (100 ms), so this measures the poll.
func BenchmarkApprovalRoundTrip(b *testing.B) {
	ctx := context.Background()
	open := map[string]func(b *testing.B) (approvals.Store, approvals.Store){
		"memory": func(*testing.B) (approvals.Store, approvals.Store) {
			s := approvals.NewMemStore(approvals.MemStoreOptions{})
			return s, s
		},
		"postgres": func(b *testing.B) (approvals.Store, approvals.Store) {
			dsn := postgresDSN(b)
			a, err := pgstore.Open(ctx, dsn, pgstore.Options{PollInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			c, err := pgstore.Open(ctx, dsn, pgstore.Options{PollInterval: time.Hour})
			if err != nil {
				b.Fatal(err)
			}
			return a, c
		},
		"sqlite": func(b *testing.B) (approvals.Store, approvals.Store) {
			path := filepath.Join(b.TempDir(), "approvals.db")
			a, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			c, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return a, c
		},
	}
	for _, name := range []string{"memory", "postgres", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			replicaA, replicaB := open[name](b)
			defer replicaA.Close()
			defer replicaB.Close()
			raised := make(chan string)
			voteErr := make(chan error, 1)
			stop := make(chan struct{})
			var voter sync.WaitGroup
			voter.Go(func() {
				for {
					select {
					case id := <-raised:
						if _, err := replicaB.Vote(ctx, id, approvals.Resolution{ApproverID: "bob", Allow: true}); err != nil {
							select {
							case voteErr <- err:
							default:
							}
						}
					case <-stop:
						return
					}
				}
			})
			defer func() { close(stop); voter.Wait() }()
			approver := approvals.StoreApprover{Store: replicaA, OnRaised: func(a approvals.Approval) { raised <- a.ID }}
			var latencies []time.Duration
			i := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				i++
				req := &approvals.Request{ID: fmt.Sprintf("apr_bench_%d_%d", time.Now().UnixNano(), i), SessionID: "sess-1",
					Requester: "alice", Server: "orders", Tool: "delete_order", Arguments: json.RawMessage(`{"id":"7"}`),
					Approvers: 1, Deadline: time.Now().Add(time.Minute)}
				began := time.Now()
				v, err := approver.Approve(ctx, req)
				latencies = append(latencies, time.Since(began))
				if err != nil || len(v.Votes) != 1 {
					select {
					case err2 := <-voteErr:
						b.Fatalf("vote: %v", err2)
					default:
					}
					b.Fatalf("approve: %v, %+v", err, v)
				}
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e6, "p50-ms")
			b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e6, "p99-ms")
		})
	}
}

// auditWriters is how many goroutines append audit records at once in
// BenchmarkAuditAppend (sessions of a busy replica).
const auditWriters = 256

// BenchmarkAuditAppend: audit records per second appended to a database
// sink by 64 concurrent writers, each Write returning only once its record
// is committed (group commit shares transactions between writers).
//
//   - postgres: the figure (target ≥ 5,000 records/s).
//   - sqlite: for reference.
func BenchmarkAuditAppend(b *testing.B) {
	ctx := context.Background()
	for _, name := range []string{"postgres", "sqlite"} {
		b.Run(name, func(b *testing.B) {
			var sink auditlog.Sink
			var err error
			switch name {
			case "postgres":
				sink, err = pgstore.OpenAuditSink(ctx, postgresDSN(b), pgstore.AuditOptions{})
			default:
				sink, err = sqlitestore.OpenAuditSink(ctx, filepath.Join(b.TempDir(), "audit.db"), sqlitestore.AuditOptions{})
			}
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			rec := auditlog.Record{SessionID: "sess-1", CallID: "call-1", Phase: auditlog.PhaseDecision, Server: "orders",
				Tool: "lookup_order", ToolDefHash: "sha256:0f3a", ExposedName: "orders__lookup_order", Arguments: hostArgs,
				SecureParams: []string{"instance", "region", "tenant_id"}, Decision: rules.ActionAllow,
				Outcome: rules.OutcomeAutoAllowed, Result: auditlog.ResultPending}
			var failures atomic.Int64
			b.ResetTimer()
			b.SetParallelism(max(1, auditWriters/runtime.GOMAXPROCS(0)))
			b.ReportAllocs()
			began := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				r := rec
				for pb.Next() {
					r.TS = time.Now()
					if err := sink.Write(ctx, &r); err != nil {
						failures.Add(1)
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "records/s")
			if n := failures.Load(); n > 0 {
				b.Fatalf("%d writes failed", n)
			}
		})
	}
}
