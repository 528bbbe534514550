package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/auditlog"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// BenchmarkAuditThroughput: approval decisions per second, each checked by
// a Gate under the allow policy and written to a FileSink, from as many
// goroutines as GOMAXPROCS.
//
//   - file_sink: the FileSink as the host opens it for audit.path: one
//     write(2) per record before Write returns, fsync at least every 200 ms
//     (group commit by time). This is the figure.
//   - fsync_each: Write followed by Flush, i.e. every decision fsynced
//     before it returns; for reference.
func BenchmarkAuditThroughput(b *testing.B) {
	policy, err := rules.NewPolicy(readsAllowed("orders"))
	if err != nil {
		b.Fatal(err)
	}
	tool := risk.ToolInfo{
		Name:        "lookup_order",
		Description: "Look up one order of the current tenant by id.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string"}}}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true}`),
	}
	risk := policy.Effective("orders", false, tool)
	for _, c := range []struct {
		name     string
		syncEach bool
	}{{"file_sink", false}, {"fsync_each", true}} {
		b.Run(c.name, func(b *testing.B) {
			sink, err := auditlog.OpenFileSink(filepath.Join(b.TempDir(), "audit.jsonl"), auditlog.FileSinkOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			gate, err := approvals.NewGate(approvals.GateConfig{Policy: policy})
			if err != nil {
				b.Fatal(err)
			}
			var failures atomic.Int64
			b.ReportAllocs()
			began := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				check := approvals.Check{SessionID: "sess-1", Subject: benchSubject, CallID: "call-1",
					ToolDefHash: "sha256:0f3a", ExposedName: "orders__lookup_order",
					Call: rules.Call{Server: "orders", Tool: "lookup_order", Args: hostArgs, TrustLevel: 1},
					Risk: risk, SecureParams: []string{"instance", "region", "tenant_id"}}
				ctx := context.Background()
				for pb.Next() {
					res, err := gate.Check(ctx, check)
					if err != nil || !res.Allowed() {
						failures.Add(1)
						continue
					}
					if err := sink.Write(ctx, auditlog.NewRecord(check, res, time.Now())); err != nil {
						failures.Add(1)
					}
					if c.syncEach {
						if err := sink.Flush(); err != nil {
							failures.Add(1)
						}
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "decisions/s")
			if n := failures.Load(); n > 0 {
				b.Fatalf("%d decisions failed or were denied", n)
			}
		})
	}
}

// BenchmarkAuditCall is what the audit costs one call that runs, in CPU
// time (the process's, the sink's sync goroutine included; wall time on a
// loaded machine is not the sink's cost): the decision record of the
// benchmark's lookup_order call made and written to a FileSink, then its
// result record (a copy with the outcome), as the host writes them.
//
//   - file_sink: through the FileSink. The figure (≤ 6 µs, issue #26).
//   - floor_write: the same two lines, encoded beforehand, each appended
//     with one bare write(2) to an O_APPEND file: what no sink can save.
func BenchmarkAuditCall(b *testing.B) {
	policy, err := rules.NewPolicy(readsAllowed("orders"))
	if err != nil {
		b.Fatal(err)
	}
	check := approvals.Check{SessionID: "sess-1", Subject: benchSubject, CallID: "call-1",
		ToolDefHash: "sha256:0f3a", ExposedName: "orders__lookup_order",
		// The arguments come checked, as the host's lookup stage hands
		// them on (rules.CheckArgs): the records do not check them again.
		Call:         rules.Call{Server: "orders", Tool: "lookup_order", Args: hostArgs, ArgsCheck: rules.CheckArgs(hostArgs), TrustLevel: 1},
		Risk:         policy.Effective("orders", false, risk.ToolInfo{Name: "lookup_order", Annotations: json.RawMessage(`{"readOnlyHint":true}`)}),
		SecureParams: []string{"instance", "region", "tenant_id"}}
	res := approvals.Result{Decision: policy.Decide(check.Risk, check.Call), Outcome: rules.OutcomeAutoAllowed}
	ctx := context.Background()
	b.Run("file_sink", func(b *testing.B) {
		sink, err := auditlog.OpenFileSink(filepath.Join(b.TempDir(), "audit.jsonl"), auditlog.FileSinkOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer sink.Close()
		b.ReportAllocs()
		began := cpuTime()
		for b.Loop() {
			rec := auditlog.NewRecord(check, res, time.Now())
			if err := sink.Write(ctx, rec); err != nil {
				b.Fatal(err)
			}
			done := rec.Copy()
			done.Phase, done.TS, done.Result = auditlog.PhaseResult, time.Now().UTC(), auditlog.ResultOK
			if err := sink.Write(ctx, done); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("floor_write", func(b *testing.B) {
		// The lines are the sink's own: one call written through a sink,
		// read back.
		path := filepath.Join(b.TempDir(), "audit.jsonl")
		sink, err := auditlog.OpenFileSink(path, auditlog.FileSinkOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rec := auditlog.NewRecord(check, res, time.Now())
		done := *rec
		done.Phase, done.Result = auditlog.PhaseResult, auditlog.ResultOK
		if err := errors.Join(sink.Write(ctx, rec), sink.Write(ctx, &done), sink.Close()); err != nil {
			b.Fatal(err)
		}
		lines, err := lastAuditLines(path, 2)
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		fd := int(f.Fd())
		b.ReportAllocs()
		began := cpuTime()
		for b.Loop() {
			for _, line := range lines {
				if _, err := syscall.Write(fd, line); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64((cpuTime()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
