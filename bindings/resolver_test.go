package bindings

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestResolver(t *testing.T, sources map[string]Source, opts ...Option) *Resolver {
	t.Helper()
	r := NewResolver(sources, opts...)
	t.Cleanup(func() { r.Close() })
	return r
}

// waitIdle waits until no source call is in flight. Only for tests that
// start no Resolve concurrently with it.
func (r *Resolver) waitIdle() { r.wg.Wait() }

var scopeA = Scope{SessionID: "s1", Subject: "alice", Server: "orders", Tool: "get", Param: "token"}

func TestResolverSingleFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var enteredOnce sync.Once
	src := SourceFunc(func(ctx context.Context, req Request) (Resolved, error) {
		enteredOnce.Do(func() { close(entered) })
		select {
		case <-release:
		case <-ctx.Done():
			return Resolved{}, ctx.Err()
		}
		return Resolved{Value: "tok-" + req.Subject, Sensitivity: Secret}, nil
	})
	r := newTestResolver(t, map[string]Source{"vault": src})

	const n = 1000
	var started, done sync.WaitGroup
	started.Add(n)
	errs := make(chan error, n)
	for range n {
		done.Go(func() {
			started.Done()
			v, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "orders/token"})
			if err == nil && v.Value != "tok-alice" {
				err = fmt.Errorf("got %q", v.Value)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	<-entered
	started.Wait()
	close(release)
	done.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := r.Calls("vault", "orders/token", scopeA); got != 1 {
		t.Fatalf("source calls = %d, want 1", got)
	}
}

func TestResolverTenantsIsolated(t *testing.T) {
	src := SourceFunc(func(ctx context.Context, req Request) (Resolved, error) {
		return Resolved{Value: "value-for-" + req.Subject, Sensitivity: Secret}, nil
	})
	r := newTestResolver(t, map[string]Source{"vault": src})
	subjects := []string{"tenant-a", "tenant-b"}
	var wg sync.WaitGroup
	var wrong atomic.Int64
	for i := range 400 {
		subject := subjects[i%2]
		wg.Go(func() {
			scope := scopeA
			scope.Subject = subject
			scope.SessionID = "sess-" + subject
			v, err := r.Resolve(t.Context(), "vault", Request{Scope: scope, Ref: "db"})
			if err != nil || v.Value != "value-for-"+subject {
				wrong.Add(1)
			}
		})
	}
	wg.Wait()
	if wrong.Load() != 0 {
		t.Fatalf("%d resolutions returned another tenant's value or failed", wrong.Load())
	}
	for _, s := range subjects {
		scope := scopeA
		scope.Subject, scope.SessionID = s, "sess-"+s
		if got := r.Calls("vault", "db", scope); got != 1 {
			t.Errorf("%s: calls = %d, want 1", s, got)
		}
	}
}

// versionedSource answers v1, v2, ... each valid for lifetime from the
// fake clock's now; failing makes it return an error instead.
type versionedSource struct {
	clock    *FakeClock
	lifetime time.Duration
	n        atomic.Int64
	failing  atomic.Bool
}

var errBackend = errors.New("backend unavailable")

func (s *versionedSource) Resolve(ctx context.Context, req Request) (Resolved, error) {
	if s.failing.Load() {
		return Resolved{}, errBackend
	}
	n := s.n.Add(1)
	r := Resolved{Value: fmt.Sprintf("v%d", n), Sensitivity: Secret}
	if s.lifetime > 0 {
		r.Expiry = s.clock.Now().Add(s.lifetime)
	}
	return r, nil
}

func TestResolverRefreshAhead(t *testing.T) {
	tests := []struct {
		lifetime  time.Duration
		refreshAt time.Duration // after fetch
	}{
		{30 * time.Minute, 25 * time.Minute}, // window capped at 5m
		{3 * time.Minute, 2 * time.Minute},   // window lifetime/3
		{90 * time.Second, 60 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.lifetime.String(), func(t *testing.T) {
			clock := NewFakeClock(t0)
			src := &versionedSource{clock: clock, lifetime: tt.lifetime}
			r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
			get := func() string {
				t.Helper()
				v, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"})
				if err != nil {
					t.Fatal(err)
				}
				return v.Value
			}
			calls := func() int { return r.Calls("vault", "k", scopeA) }

			if got := get(); got != "v1" {
				t.Fatalf("first = %s", got)
			}
			clock.Advance(tt.refreshAt - time.Nanosecond)
			if got := get(); got != "v1" || calls() != 1 {
				t.Fatalf("before window: %s after %d calls", got, calls())
			}
			r.waitIdle()
			if calls() != 1 {
				t.Fatalf("refreshed before the window: %d calls", calls())
			}
			clock.Advance(time.Nanosecond)
			// Inside the window: the still-valid value is served at once
			// and a refresh starts in the background.
			if got := get(); got != "v1" {
				t.Fatalf("in window got %s, want the current v1", got)
			}
			r.waitIdle()
			if calls() != 2 {
				t.Fatalf("calls = %d, want a background refresh", calls())
			}
			if got := get(); got != "v2" {
				t.Fatalf("after refresh got %s, want v2 (before the old expiry)", got)
			}
		})
	}
}

func TestResolverNeverServesExpired(t *testing.T) {
	clock := NewFakeClock(t0)
	src := &versionedSource{clock: clock, lifetime: 30 * time.Minute}
	r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
	resolve := func() (Resolved, error) {
		return r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"})
	}
	if v, err := resolve(); err != nil || v.Value != "v1" {
		t.Fatalf("first: %v %v", v, err)
	}

	// The refresh fails: the valid value is still served.
	src.failing.Store(true)
	clock.Advance(26 * time.Minute)
	if v, err := resolve(); err != nil || v.Value != "v1" {
		t.Fatalf("in window with failing refresh: %v %v", v, err)
	}
	r.waitIdle()
	if v, err := resolve(); err != nil || v.Value != "v1" {
		t.Fatalf("after failed refresh, before expiry: %v %v", v, err)
	}

	// Expired and the source still fails: an error, never v1.
	clock.Advance(4 * time.Minute)
	v, err := resolve()
	if !errors.Is(err, errBackend) {
		t.Fatalf("after expiry got %+v, %v; want the source's error", v, err)
	}
	if v.Value != "" {
		t.Fatalf("expired value leaked with the error: %q", v.Value)
	}

	// The source recovers: a fresh value once the negative cache lapses.
	src.failing.Store(false)
	clock.Advance(DefaultNegativeTTL)
	if v, err := resolve(); err != nil || v.Value != "v2" {
		t.Fatalf("after recovery: %v %v", v, err)
	}
}

func TestResolverRejectsExpiredAnswer(t *testing.T) {
	clock := NewFakeClock(t0)
	src := SourceFunc(func(ctx context.Context, req Request) (Resolved, error) {
		return Resolved{Value: "stale-value", Expiry: clock.Now().Add(-time.Second)}, nil
	})
	r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
	_, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"})
	if err == nil || !strings.Contains(err.Error(), "expired") || strings.Contains(err.Error(), "stale-value") {
		t.Fatalf("err = %v", err)
	}
}

func TestResolverNegativeCache(t *testing.T) {
	tests := []struct {
		name      string
		ttl       time.Duration
		wantCalls []int // after each of: 3 quick resolves, ttl-1ns later, at ttl
	}{
		{"default 2s", DefaultNegativeTTL, []int{1, 1, 2}},
		{"custom 10s", 10 * time.Second, []int{1, 1, 2}},
		{"disabled", -1, []int{3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := NewFakeClock(t0)
			src := SourceFunc(func(context.Context, Request) (Resolved, error) { return Resolved{}, errBackend })
			opts := []Option{WithClock(clock)}
			if tt.ttl != DefaultNegativeTTL {
				opts = append(opts, WithNegativeTTL(tt.ttl))
			}
			r := newTestResolver(t, map[string]Source{"vault": src}, opts...)
			resolve := func() {
				t.Helper()
				if _, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"}); !errors.Is(err, errBackend) {
					t.Fatalf("err = %v", err)
				}
			}
			calls := func() int { return r.Calls("vault", "k", scopeA) }
			for range 3 {
				resolve()
			}
			if calls() != tt.wantCalls[0] {
				t.Fatalf("calls = %d, want %d", calls(), tt.wantCalls[0])
			}
			clock.Advance(max(tt.ttl-time.Nanosecond, 0))
			resolve()
			if calls() != tt.wantCalls[1] {
				t.Fatalf("just before ttl: calls = %d, want %d", calls(), tt.wantCalls[1])
			}
			clock.Advance(time.Nanosecond)
			resolve()
			if calls() != tt.wantCalls[2] {
				t.Fatalf("at ttl: calls = %d, want %d", calls(), tt.wantCalls[2])
			}
		})
	}
}

func TestResolverTimeout(t *testing.T) {
	t.Run("source honours ctx", func(t *testing.T) {
		src := SourceFunc(func(ctx context.Context, _ Request) (Resolved, error) {
			<-ctx.Done()
			return Resolved{}, ctx.Err()
		})
		r := newTestResolver(t, map[string]Source{"slow": src}, WithCallTimeout(30*time.Millisecond))
		start := time.Now()
		_, err := r.Resolve(t.Context(), "slow", Request{Scope: scopeA, Ref: "k"})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "30ms") {
			t.Fatalf("err = %v, want a deadline error naming the timeout", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("took %v", d)
		}
	})
	t.Run("source ignores ctx", func(t *testing.T) {
		release := make(chan struct{})
		src := SourceFunc(func(context.Context, Request) (Resolved, error) {
			<-release
			return Resolved{Value: "late"}, nil
		})
		r := NewResolver(map[string]Source{"stuck": src}, WithCallTimeout(30*time.Millisecond))
		defer func() { close(release); r.Close() }()
		_, err := r.Resolve(t.Context(), "stuck", Request{Scope: scopeA, Ref: "k"})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestResolverWaiterGivesUp(t *testing.T) {
	release := make(chan struct{})
	src := SourceFunc(func(ctx context.Context, _ Request) (Resolved, error) {
		select {
		case <-release:
			return Resolved{Value: "tok"}, nil
		case <-ctx.Done():
			return Resolved{}, ctx.Err()
		}
	})
	r := newTestResolver(t, map[string]Source{"vault": src})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := r.Resolve(ctx, "vault", Request{Scope: scopeA, Ref: "k"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	// The call continues for others despite the first caller leaving.
	close(release)
	v, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"})
	if err != nil || v.Value != "tok" {
		t.Fatalf("got %v, %v", v, err)
	}
	if got := r.Calls("vault", "k", scopeA); got != 1 {
		t.Fatalf("calls = %d, want 1", got)
	}
}

func TestResolverInvalidate(t *testing.T) {
	clock := NewFakeClock(t0)
	src := &versionedSource{clock: clock}
	r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
	get := func(scope Scope) string {
		v, err := r.Resolve(t.Context(), "vault", Request{Scope: scope, Ref: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return v.Value
	}
	other := scopeA
	other.Subject = "bob"
	first, again := get(scopeA), get(scopeA) // the second is served from the cache
	if first != "v1" || again != "v1" || get(other) != "v2" {
		t.Fatal("unexpected initial values")
	}
	r.Invalidate("vault", "k", scopeA)
	if got := get(scopeA); got != "v3" {
		t.Fatalf("after Invalidate got %s, want a fresh v3", got)
	}
	if got := get(other); got != "v2" {
		t.Fatalf("Invalidate touched another scope: %s", got)
	}

	// Invalidate also forgets a remembered failure.
	src.failing.Store(true)
	r.Invalidate("vault", "k", scopeA)
	if _, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"}); !errors.Is(err, errBackend) {
		t.Fatal(err)
	}
	src.failing.Store(false)
	r.Invalidate("vault", "k", scopeA)
	if got := get(scopeA); got != "v4" {
		t.Fatalf("after failure + Invalidate got %s", got)
	}
	r.Invalidate("nope", "k", scopeA) // unknown source: no-op
}

type independentSource struct{ SourceFunc }

func (independentSource) ScopeIndependent() bool { return true }

type subjectScoped struct{ SourceFunc }

func (subjectScoped) CacheScope(s Scope) Scope { return Scope{Subject: s.Subject} }

func TestResolverCacheScope(t *testing.T) {
	answer := SourceFunc(func(context.Context, Request) (Resolved, error) { return Resolved{Value: "x"}, nil })
	tests := []struct {
		name string
		src  Source
		want int // calls after resolving the four scopes below
	}{
		{"full scope", answer, 4},
		{"scope independent", independentSource{answer}, 1},
		{"per subject", subjectScoped{answer}, 2},
	}
	scopes := []Scope{
		scopeA,
		{SessionID: "s2", Subject: "alice", Server: "orders", Tool: "get", Param: "token"},
		{SessionID: "s3", Subject: "bob", Server: "orders", Tool: "get", Param: "token"},
		{SessionID: "s3", Subject: "bob", Server: "orders", Tool: "put", Param: "token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestResolver(t, map[string]Source{"s": tt.src})
			for _, sc := range scopes {
				if _, err := r.Resolve(t.Context(), "s", Request{Scope: sc, Ref: "k"}); err != nil {
					t.Fatal(err)
				}
			}
			if got := r.TotalCalls(); got != tt.want {
				t.Fatalf("calls = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestResolverSelfCachingAlwaysCalled(t *testing.T) {
	r := newTestResolver(t, map[string]Source{SourceSession: SessionSource{}})
	for _, want := range []string{"first", "second"} {
		ctx := ContextWithSessionValues(t.Context(), MapValues{"instance": want})
		v, err := r.Resolve(ctx, SourceSession, Request{Scope: scopeA, Ref: "instance"})
		if err != nil || v.Value != want {
			t.Fatalf("got %v, %v; want %s", v, err, want)
		}
	}
	if got := r.Calls(SourceSession, "instance", scopeA); got != 2 {
		t.Fatalf("calls = %d, want 2 (never cached)", got)
	}
}

func TestResolverRegistersWithRedactor(t *testing.T) {
	red := NewRedactor()
	src := SourceFunc(func(_ context.Context, req Request) (Resolved, error) {
		s := map[string]Sensitivity{"pub-value": Public, "int-value": Internal, "sec-value": Secret}[req.Ref]
		return Resolved{Value: req.Ref, Sensitivity: s}, nil
	})
	r := newTestResolver(t, map[string]Source{"s": src}, WithRedactor(red))
	for _, ref := range []string{"pub-value", "int-value", "sec-value"} {
		if _, err := r.Resolve(t.Context(), "s", Request{Scope: scopeA, Ref: ref}); err != nil {
			t.Fatal(err)
		}
	}
	if got := red.Redact("pub-value int-value sec-value"); got != "pub-value [REDACTED] [REDACTED]" {
		t.Fatalf("got %q", got)
	}
}

func TestResolverForgetSession(t *testing.T) {
	clock := NewFakeClock(t0)
	src := &versionedSource{clock: clock}
	r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
	other := scopeA
	other.SessionID = "s2"
	for _, sc := range []Scope{scopeA, other} {
		if _, err := r.Resolve(t.Context(), "vault", Request{Scope: sc, Ref: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	r.ForgetSession(scopeA.SessionID)
	if got := r.Calls("vault", "k", scopeA); got != 0 {
		t.Fatalf("calls for forgotten session = %d", got)
	}
	if v, _ := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"}); v.Value != "v3" {
		t.Fatalf("forgotten session got cached %s", v.Value)
	}
	if v, _ := r.Resolve(t.Context(), "vault", Request{Scope: other, Ref: "k"}); v.Value != "v2" {
		t.Fatalf("other session lost its value: %s", v.Value)
	}
}

func TestResolverSweepsDeadEntries(t *testing.T) {
	clock := NewFakeClock(t0)
	src := &versionedSource{clock: clock, lifetime: time.Minute}
	r := newTestResolver(t, map[string]Source{"vault": src}, WithClock(clock))
	for i := range minSweep {
		sc := scopeA
		sc.SessionID = fmt.Sprint(i)
		if _, err := r.Resolve(t.Context(), "vault", Request{Scope: sc, Ref: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Minute) // all expired
	if _, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "new"}); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	n := len(r.entries)
	r.mu.Unlock()
	if n > 1 {
		t.Fatalf("%d entries left after sweep, want 1", n)
	}
}

func TestResolverClose(t *testing.T) {
	entered := make(chan struct{})
	src := SourceFunc(func(ctx context.Context, _ Request) (Resolved, error) {
		close(entered)
		<-ctx.Done()
		return Resolved{}, ctx.Err()
	})
	r := NewResolver(map[string]Source{"vault": src})
	errc := make(chan error, 1)
	go func() {
		_, err := r.Resolve(context.Background(), "vault", Request{Scope: scopeA, Ref: "k"})
		errc <- err
	}()
	<-entered
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("in-flight caller got %v, want ErrClosed", err)
	}
	if _, err := r.Resolve(t.Context(), "vault", Request{Scope: scopeA, Ref: "k"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestResolverUnknownSource(t *testing.T) {
	r := newTestResolver(t, nil)
	if _, err := r.Resolve(t.Context(), "vault", Request{Ref: "k"}); !errors.Is(err, ErrUnknownSource) {
		t.Fatalf("err = %v", err)
	}
}

// TestResolverCallCountsAreBounded: the per-key call counters (keys carry
// the session) do not grow with every session a long-lived host serves.
func TestResolverCallCountsAreBounded(t *testing.T) {
	src := SourceFunc(func(_ context.Context, req Request) (Resolved, error) {
		return Resolved{Value: "v-" + req.SessionID, Sensitivity: Public}, nil
	})
	r := newTestResolver(t, map[string]Source{"vault": src})
	for i := range 3 * maxCallCounts {
		scope := scopeA
		scope.SessionID = fmt.Sprint("s", i)
		if _, err := r.Resolve(t.Context(), "vault", Request{Scope: scope, Ref: "orders/token"}); err != nil {
			t.Fatal(err)
		}
	}
	r.waitIdle()
	r.mu.Lock()
	n := len(r.calls)
	r.mu.Unlock()
	if n > maxCallCounts {
		t.Errorf("%d call counters kept, want at most %d", n, maxCallCounts)
	}
}
