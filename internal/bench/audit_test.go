package bench

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
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
