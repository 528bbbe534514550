package auditlog

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// BenchmarkDecideWithDurableAudit is the throughput target: decisions per
// second through the Gate, each written to a file-backed audit log that is
// fsynced in batches. The target is at least 20,000 decisions/s.
func BenchmarkDecideWithDurableAudit(b *testing.B) {
	p := approvaltest.MustPolicy(b, approvaltest.ContractConfig())
	sink, err := OpenFileSink(filepath.Join(b.TempDir(), "audit.jsonl"), FileSinkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	g, err := approvals.NewGate(approvals.GateConfig{Policy: p})
	if err != nil {
		b.Fatal(err)
	}
	risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1).Normalize()
	var failures atomic.Int64
	b.ReportAllocs()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		c := approvals.Check{SessionID: "s", Subject: "u", CallID: "c", ToolDefHash: "sha256:x", ExposedName: "orders__get_order",
			Call: rules.Call{Server: "orders", Tool: "get_order", Args: json.RawMessage(`{"id":"42"}`), TrustLevel: 2}, Risk: risk}
		for pb.Next() {
			res, err := g.Check(context.Background(), c)
			if err != nil || !res.Allowed() {
				failures.Add(1)
			}
			if err := sink.Write(context.Background(), NewRecord(c, res, time.Now())); err != nil {
				failures.Add(1)
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
	if failures.Load() > 0 {
		b.Fatalf("%d failures", failures.Load())
	}
}

// BenchmarkFileSinkCall is what one call that runs costs a FileSink: its
// decision record, then its result record (a copy with the outcome).
func BenchmarkFileSinkCall(b *testing.B) {
	sink, err := OpenFileSink(filepath.Join(b.TempDir(), "audit.jsonl"), FileSinkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	c, res := sinkCall()
	ctx := context.Background()
	b.ReportAllocs()
	began := processCPU()
	for b.Loop() {
		rec := NewRecord(c, res, time.Now())
		if err := sink.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		done := *rec
		done.Phase, done.Result = PhaseResult, ResultOK
		if err := sink.Write(ctx, &done); err != nil {
			b.Fatal(err)
		}
	}
	// This process's CPU (user + system: the write(2)s are most of it),
	// the sync goroutine's included: wall time on a loaded machine is
	// not the sink's cost.
	b.ReportMetric(float64((processCPU()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFileSinkCallFloor is what BenchmarkFileSinkCall cannot go
// below: the two records' lines, encoded once beforehand, each appended
// with one bare write(2) to an O_APPEND file in the same directory, as the
// sink appends them (no lock, no check, no encoding, no sync).
func BenchmarkFileSinkCallFloor(b *testing.B) {
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "audit.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	c, res := sinkCall()
	rec := NewRecord(c, res, time.Now())
	decision := append(rec.appendJSON(nil), '\n')
	rec.Phase, rec.Result = PhaseResult, ResultOK
	result := append(rec.appendJSON(nil), '\n')
	fd := int(f.Fd())
	b.ReportAllocs()
	began := processCPU()
	for b.Loop() {
		for _, line := range [][]byte{decision, result} {
			if n, err := syscall.Write(fd, line); err != nil || n != len(line) {
				b.Fatal(n, err)
			}
		}
	}
	b.ReportMetric(float64((processCPU()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// sinkCall is the gated call of the FileSink benchmarks.
func sinkCall() (approvals.Check, approvals.Result) {
	risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1).Normalize()
	c := approvals.Check{SessionID: "s", Subject: "u", CallID: "c", ToolDefHash: "sha256:x", ExposedName: "orders__get_order",
		Call: rules.Call{Server: "orders", Tool: "get_order", Args: json.RawMessage(`{"id":"42"}`), TrustLevel: 2}, Risk: risk,
		SecureParams: []string{"tenant_id"}}
	return c, approvals.Result{Decision: rules.Decision{Action: rules.ActionAllow, Risk: risk}, Outcome: rules.OutcomeAutoAllowed}
}
