package auditlog

import (
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
)

// BenchmarkRecordEncode is the making and encoding alone of one call's
// two records (BenchmarkFileSinkCall's, its arguments checked as the
// host's come): the decision record from NewRecord, then its result
// record, a copy, as the host makes them; cpu-ns/op is the process's CPU,
// the collector's included.
func BenchmarkRecordEncode(b *testing.B) {
	c, res := sinkCall()
	c.Call.ArgsCheck = rules.CheckArgs(c.Call.Args)
	ts := time.Date(2026, 12, 3, 7, 1, 2, 345678900, time.UTC)
	buf := make([]byte, 0, 2048)
	tools := new(toolCache) // as a line sink's
	b.ReportAllocs()
	began := processCPU()
	for b.Loop() {
		rec := NewRecord(c, res, ts)
		buf = rec.appendJSONWith(buf[:0], tools)
		done := *rec
		done.Phase, done.TS, done.Result, done.DurationMs = PhaseResult, ts.Add(1234567), ResultOK, 1
		buf = done.appendJSONWith(buf[:0], tools)
	}
	b.ReportMetric(float64((processCPU()-began).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
