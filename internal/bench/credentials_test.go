package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/plugins"
)

const credentialsYAML = `
orders/token:
  value: default-token
  expiration: 2031-02-03T04:05:06Z
  tenants:
    acme: acme-token-7f3a9c
    globex: globex-token
plain: plain-value
`

// pluginSource runs the example plugin agenthost-cred-file (gRPC over an
// mTLS unix socket) once per process.
func pluginSource(tb testing.TB) *plugins.Source {
	bin := binary(tb, "agenthost-cred-file")
	return sharedFixture(tb, "credfile", func() (*plugins.Source, error) {
		dir, err := tempDir("agenthost-bench-cred-")
		if err != nil {
			return nil, err
		}
		creds := filepath.Join(dir, "creds.yaml")
		if err := os.WriteFile(creds, []byte(credentialsYAML), 0o600); err != nil {
			return nil, err
		}
		sum, err := plugins.FileChecksum(bin)
		if err != nil {
			return nil, err
		}
		src, err := plugins.NewSource(plugins.Options{
			Path:      bin,
			Checksum:  sum,
			Config:    map[string]any{"path": creds},
			SocketDir: dir, // short: unix socket paths are limited to ~100 bytes
		})
		if err != nil {
			return nil, err
		}
		onClose(func() { _ = src.Close() })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := src.Resolve(ctx, credentialRequest); err != nil { // start the plugin
			return nil, fmt.Errorf("first resolve: %w", err)
		}
		return src, nil
	})
}

var credentialRequest = bindings.Request{
	Scope: bindings.Scope{SessionID: "sess-1", Subject: "acme", Server: "orders", Tool: "lookup_order", Param: "token"},
	Ref:   "orders/token",
}

// countingSource counts the calls that reach the plugin.
type countingSource struct {
	inner bindings.Source
	calls atomic.Int64
}

func (c *countingSource) Resolve(ctx context.Context, req bindings.Request) (bindings.Resolved, error) {
	c.calls.Add(1)
	return c.inner.Resolve(ctx, req)
}

const concurrentMisses = 1000

// BenchmarkCredentialResolve:
//   - cached: a Resolver hit for a value the plugin supplied earlier;
//   - plugin_round_trip: one Resolve through the plugin process, uncached
//     (p50-µs and p99-µs are the latency percentiles over all calls);
//   - concurrent_misses: 1,000 goroutines released at once resolving the
//     same key on a fresh Resolver; plugin-calls/op must be exactly 1, and
//     ns/op is the time until all 1,000 have their value.
func BenchmarkCredentialResolve(b *testing.B) {
	src := pluginSource(b)
	ctx := context.Background()
	b.Run("cached", func(b *testing.B) {
		r := bindings.NewResolver(map[string]bindings.Source{"creds": src})
		defer r.Close()
		if _, err := r.Resolve(ctx, "creds", credentialRequest); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Resolve(ctx, "creds", credentialRequest); err != nil {
				b.Fatal(err)
			}
		}
		if n := r.TotalCalls(); n != 1 {
			b.Errorf("the plugin was called %d times, want 1", n)
		}
	})
	b.Run("plugin_round_trip", func(b *testing.B) {
		var latencies []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			began := time.Now()
			if _, err := src.Resolve(ctx, credentialRequest); err != nil {
				b.Fatal(err)
			}
			latencies = append(latencies, time.Since(began))
		}
		slices.Sort(latencies)
		b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e3, "p99-µs")
	})
	b.Run("concurrent_misses", func(b *testing.B) {
		counted := &countingSource{inner: src}
		var resolvers int64
		b.ReportAllocs()
		for range b.N {
			b.StopTimer()
			r := bindings.NewResolver(map[string]bindings.Source{"creds": counted})
			start := make(chan struct{})
			var wg sync.WaitGroup
			var failed atomic.Int64
			for range concurrentMisses {
				wg.Go(func() {
					<-start
					if v, err := r.Resolve(ctx, "creds", credentialRequest); err != nil || v.Value != "acme-token-7f3a9c" {
						failed.Add(1)
					}
				})
			}
			b.StartTimer()
			close(start)
			wg.Wait()
			b.StopTimer()
			_ = r.Close()
			resolvers++
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d resolves failed", n, concurrentMisses)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(counted.calls.Load())/float64(resolvers), "plugin-calls/op")
	})
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
