package bench

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host"
)

const idleSessions = 10_000

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // the second cycle also frees what the first one's finalizers released
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkIdleSessions: the live heap that 10,000 sessions add to one
// Host, measured by runtime.ReadMemStats after a GC before and after
// opening them ("opened"), and after each has also made one tool call
// ("after_one_call": resolver cache entries and the like). Reported as
// B/session; ns/op is the time to open (and call with) all of them.
func BenchmarkIdleSessions(b *testing.B) {
	f := inProcessFixture(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		call bool
	}{{"opened", false}, {"after_one_call", true}} {
		b.Run(c.name, func(b *testing.B) {
			var perSession float64
			for range b.N {
				b.StopTimer()
				f.forget()
				sessions := make([]*host.Session, idleSessions)
				base := heapInUse()
				b.StartTimer()
				for i := range sessions {
					sessions[i] = newSession(f.host)
					if c.call {
						if _, err := sessions[i].CallTool(ctx, "orders", "lookup_order", hostArgs); err != nil {
							b.Fatal(err)
						}
						if i%256 == 255 {
							f.forget()
						}
					}
				}
				b.StopTimer()
				f.forget()
				used := heapInUse()
				runtime.KeepAlive(sessions)
				perSession = (float64(used) - float64(base)) / idleSessions
				for _, s := range sessions {
					s.Close()
				}
				b.StartTimer()
			}
			b.ReportMetric(perSession, "B/session")
		})
	}
}

// concurrencyFixture is a host with n warm sessions on the mcptest server
// over loopback HTTP (the transport where connections are pooled and can
// run out): each has resolved its secure values and made one call.
type concurrencyFixture struct {
	*callFixture
	sessions []*host.Session
}

func concurrency(tb testing.TB, n int) *concurrencyFixture {
	base := httpFixture(tb)
	return sharedFixture(tb, fmt.Sprintf("concurrency/%d", n), func() (*concurrencyFixture, error) {
		f := &concurrencyFixture{callFixture: base}
		ctx := context.Background()
		f.sessions = make([]*host.Session, n)
		for i := range f.sessions {
			f.sessions[i] = newSession(f.host)
			if _, err := f.sessions[i].CallTool(ctx, "orders", "lookup_order", hostArgs); err != nil {
				return nil, fmt.Errorf("warm-up: %w", err)
			}
		}
		onClose(func() {
			for _, s := range f.sessions {
				s.Close()
			}
		})
		f.forget()
		return f, nil
	})
}

// BenchmarkConcurrency: N sessions, one goroutine each, calling
// lookup_order at once until b.N calls are done between them. calls/s is
// the throughput; the figure is calls/s at 1,000 over calls/s at 10.
func BenchmarkConcurrency(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			f := concurrency(b, n)
			ctx := context.Background()
			var next, failed atomic.Int64
			var firstErr atomic.Value
			start := make(chan struct{})
			var wg sync.WaitGroup
			for _, s := range f.sessions {
				wg.Go(func() {
					<-start
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						if i%1024 == 0 {
							f.forget()
						}
						if _, err := s.CallTool(ctx, "orders", "lookup_order", hostArgs); err != nil {
							failed.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
					}
				})
			}
			b.ReportAllocs()
			b.ResetTimer()
			began := time.Now()
			close(start)
			wg.Wait()
			elapsed := time.Since(began)
			b.StopTimer()
			f.forget()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d calls failed; first: %v", n, b.N, firstErr.Load())
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
		})
	}
}
