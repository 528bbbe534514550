//go:build linux

package bench

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/internal/childproc"
)

// BenchmarkSandboxSetup: what the sandbox adds to a stdio server's start,
// measured inside the real supervisor (the agenthost binary): rlimits, the
// Landlock ruleset over the system paths and one granted folder, and the
// seccomp filter, applied to the thread that then starts the server. The
// process start itself (the same with and without a sandbox) is not in the
// figure; ns/op is the whole supervisor run for reference. The figure is
// the median setup, p50-µs (a busy machine's preemption shows in p99-µs).
func BenchmarkSandboxSetup(b *testing.B) {
	sup := &childproc.Supervisor{Path: binary(b, "agenthost")}
	dir := b.TempDir()
	for _, tc := range []struct {
		name string
		sb   childproc.Sandbox
	}{
		{"network=none", childproc.Sandbox{Read: []string{dir}, Write: []string{dir}, Network: childproc.NetworkNone}},
		{"loopback+limits", childproc.Sandbox{Read: []string{dir}, Write: []string{dir}, Network: childproc.NetworkLoopback,
			Ports: []uint16{5432}, Limits: childproc.Limits{OpenFiles: 1024, CPUSeconds: 600}}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			if childproc.Probe() < 4 {
				b.Fatalf("this kernel has Landlock ABI %d; the benchmark needs 4", childproc.Probe())
			}
			var samples []time.Duration
			for b.Loop() {
				d, err := sup.MeasureSandbox(&tc.sb)
				if err != nil {
					b.Fatal(err)
				}
				samples = append(samples, d)
			}
			slices.Sort(samples)
			b.ReportMetric(float64(samples[len(samples)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(samples[len(samples)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
	_ = os.Remove(dir)
}
