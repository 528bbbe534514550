package bindings

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrClosed is returned by a Resolver (and its Binder) after Close.
var ErrClosed = errors.New("credential resolver closed")

// ErrUnknownSource is returned when a Resolve names a source the Resolver
// does not know.
var ErrUnknownSource = errors.New("unknown credential source")

// Resolver fetches values from sources and caches them.
//
// Cache key: (source name, ref, scope), where scope is the full Scope
// unless the source narrows it (ScopeIndependent drops the scope entirely,
// CacheScoper keeps the part it returns). Two subjects therefore never
// share a value unless the source says its values do not depend on them.
//
// Behaviour for cached sources:
//   - concurrent misses for one key make a single source call; each
//     waiter may give up through its own context without cancelling the
//     call for the others;
//   - a value with an Expiry is refreshed in the background once it is
//     within min(max refresh window, lifetime/3) of expiry, while the
//     still-valid value keeps being served; refresh is triggered by the
//     first Resolve inside that window;
//   - an expired value is never served: the caller waits for a fresh one
//     or gets the error;
//   - a failure is remembered for the negative TTL and returned without
//     calling the source (a background refresh failure only delays the
//     next refresh attempt while the old value is still valid);
//   - each call is bounded by the call timeout.
//
// Sources implementing SelfCaching (the built-ins, session values in
// particular) are called on every Resolve and never cached.
//
// The background calls are owned by the Resolver: Close cancels them and
// waits for them.
type Resolver struct {
	sources map[string]Source
	cfg     settings

	stop     context.Context
	stopFunc context.CancelFunc
	wg       sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	entries map[cacheKey]*entry
	calls   map[cacheKey]int
	sweepAt int
}

type cacheKey struct {
	source string
	ref    string
	scope  Scope
}

type entry struct {
	value     Resolved
	hasValue  bool
	refreshAt time.Time // zero: never refresh (the value does not expire)
	failure   error
	failUntil time.Time
	flight    *flight
}

// flight is one source call that any number of callers wait for.
type flight struct {
	done       chan struct{}
	background bool
	value      Resolved
	err        error
}

const minSweep = 1024

// NewResolver returns a Resolver over the named sources. The map is
// copied; nil entries are ignored.
func NewResolver(sources map[string]Source, opts ...Option) *Resolver {
	r := &Resolver{
		sources: make(map[string]Source, len(sources)),
		cfg:     newSettings(opts),
		entries: make(map[cacheKey]*entry),
		calls:   make(map[cacheKey]int),
		sweepAt: minSweep,
	}
	for name, src := range sources {
		if src != nil {
			r.sources[name] = src
		}
	}
	r.stop, r.stopFunc = context.WithCancel(context.Background())
	return r
}

// Resolve returns the value of ref from the named source for req.Scope.
// Errors name the source and ref, never a value.
func (r *Resolver) Resolve(ctx context.Context, source string, req Request) (Resolved, error) {
	obs := r.cfg.observer
	if obs == nil {
		v, _, err := r.resolve(ctx, source, req)
		return v, err
	}
	start := time.Now()
	v, cache, err := r.resolve(ctx, source, req)
	obs(ctx, ResolveEvent{Source: source, Server: req.Server, Tool: req.Tool, Param: req.Param,
		Cache: cache, Start: start, Duration: time.Since(start), Failed: err != nil})
	return v, err
}

// resolve is Resolve, also saying how the cache answered.
func (r *Resolver) resolve(ctx context.Context, source string, req Request) (Resolved, CacheOutcome, error) {
	src, ok := r.sources[source]
	if !ok {
		return Resolved{}, CacheMiss, fmt.Errorf("%w %q", ErrUnknownSource, source)
	}
	key := keyFor(source, src, req)
	if selfCaching(src) {
		v, err := r.resolveDirect(ctx, key, src, req)
		return v, CacheBypass, err
	}
	cache := CacheHit
	for {
		now := r.cfg.clock.Now()
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			return Resolved{}, cache, ErrClosed
		}
		e := r.entries[key]
		if e == nil {
			r.maybeSweep(now)
			e = &entry{}
			r.entries[key] = e
		}
		if e.hasValue && !expired(e.value, now) {
			if e.flight == nil && !e.refreshAt.IsZero() && !now.Before(e.refreshAt) && !now.Before(e.failUntil) {
				r.startFlight(ctx, key, e, src, req, true)
			}
			v := e.value
			r.mu.Unlock()
			return v, cache, nil
		}
		if e.failure != nil && now.Before(e.failUntil) {
			err := e.failure
			r.mu.Unlock()
			return Resolved{}, CacheNegative, err
		}
		cache = CacheMiss
		f := e.flight
		if f == nil {
			f = r.startFlight(ctx, key, e, src, req, false)
		}
		r.mu.Unlock()

		select {
		case <-f.done:
		case <-ctx.Done():
			return Resolved{}, cache, fmt.Errorf("waiting for source %q: %w", source, ctx.Err())
		}
		if f.err != nil {
			return Resolved{}, cache, f.err
		}
		// A background flight may have finished with a value that is
		// already inside its refresh window or, with a slow clock, past
		// expiry; loop so the checks above apply to it.
		if !expired(f.value, r.cfg.clock.Now()) {
			return f.value, cache, nil
		}
	}
}

func (r *Resolver) resolveDirect(ctx context.Context, key cacheKey, src Source, req Request) (Resolved, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Resolved{}, ErrClosed
	}
	r.countCall(key)
	r.mu.Unlock()
	v, err := src.Resolve(ctx, req)
	if err != nil {
		return Resolved{}, fmt.Errorf("source %q, ref %q: %w", key.source, req.Ref, err)
	}
	r.register(v)
	return v, nil
}

// startFlight begins a source call; r.mu must be held. The call runs in a
// goroutine owned by the Resolver with the caller's context values but
// not its cancellation, so one impatient caller does not fail the others.
func (r *Resolver) startFlight(ctx context.Context, key cacheKey, e *entry, src Source, req Request, background bool) *flight {
	f := &flight{done: make(chan struct{}), background: background}
	e.flight = f
	r.countCall(key)
	callCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.callTimeout)
	stopOnClose := context.AfterFunc(r.stop, cancel)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer cancel()
		defer stopOnClose()
		v, err := r.call(callCtx, src, req)
		r.finish(key, e, f, v, err)
	}()
	return f
}

type callResult struct {
	value Resolved
	err   error
}

// call runs the source and returns when it answers or the context ends,
// whichever comes first, so a source that ignores its context cannot hold
// the waiters past the timeout. Its goroutine is still tracked, so Close
// waits for it.
func (r *Resolver) call(ctx context.Context, src Source, req Request) (Resolved, error) {
	results := make(chan callResult, 1)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		v, err := src.Resolve(ctx, req)
		results <- callResult{v, err}
	}()
	var res callResult
	select {
	case res = <-results:
	case <-ctx.Done():
		res = callResult{err: ctx.Err()}
	}
	if res.err != nil && ctx.Err() != nil {
		if r.stop.Err() != nil {
			return Resolved{}, ErrClosed
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return Resolved{}, fmt.Errorf("no answer within %s: %w", r.cfg.callTimeout, context.DeadlineExceeded)
		}
	}
	return res.value, res.err
}

func (r *Resolver) finish(key cacheKey, e *entry, f *flight, v Resolved, err error) {
	now := r.cfg.clock.Now()
	if err == nil && expired(v, now) {
		err = errors.New("source returned a value that has already expired")
	}
	if err != nil {
		err = fmt.Errorf("source %q, ref %q: %w", key.source, key.ref, err)
	}
	r.mu.Lock()
	current := e.flight == f // false after Invalidate detached it
	if current {
		e.flight = nil
	}
	switch {
	case err != nil:
		f.err = err
		if current && r.cfg.negativeTTL > 0 && !errors.Is(err, ErrClosed) {
			e.failure = err
			e.failUntil = now.Add(r.cfg.negativeTTL)
		}
	default:
		f.value = v
		if current {
			e.value, e.hasValue = v, true
			e.failure, e.failUntil = nil, time.Time{}
			e.refreshAt = r.refreshAt(v, now)
		}
	}
	r.mu.Unlock()
	if err == nil {
		r.register(v)
	} else if f.background && !errors.Is(err, ErrClosed) {
		r.cfg.logger.Warn("credential refresh failed; serving the current value until it expires",
			"source", key.source, "ref", key.ref, "error", r.cfg.redactor.Redact(err.Error()))
	}
	close(f.done)
}

func (r *Resolver) refreshAt(v Resolved, now time.Time) time.Time {
	if v.Expiry.IsZero() {
		return time.Time{}
	}
	window := min(r.cfg.maxRefreshWindow, v.Expiry.Sub(now)/3)
	return v.Expiry.Add(-window)
}

func (r *Resolver) register(v Resolved) {
	if r.cfg.redactor != nil && v.Sensitivity >= Internal {
		r.cfg.redactor.Add(v.Value)
	}
}

// maybeSweep drops dead entries once the map has doubled since the last
// sweep, so per-session keys do not accumulate forever. r.mu must be held.
func (r *Resolver) maybeSweep(now time.Time) {
	if len(r.entries) < r.sweepAt {
		return
	}
	for k, e := range r.entries {
		if e.flight != nil {
			continue
		}
		live := e.hasValue && !expired(e.value, now)
		failing := e.failure != nil && now.Before(e.failUntil)
		if !live && !failing {
			delete(r.entries, k)
		}
	}
	r.sweepAt = max(minSweep, 2*len(r.entries))
}

// Invalidate drops the cached value (and any remembered failure) for the
// key, e.g. after the server rejected the value, so the next Resolve calls
// the source again. A call already in flight is detached: its waiters get
// its answer, but later callers do not.
func (r *Resolver) Invalidate(source, ref string, scope Scope) {
	src, ok := r.sources[source]
	if !ok {
		return
	}
	key := keyFor(source, src, Request{Scope: scope, Ref: ref})
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.entries, key)
}

// ForgetSession drops every cached value and call count whose key holds
// the session id. Call it when a session ends.
func (r *Resolver) ForgetSession(sessionID string) {
	if sessionID == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.entries {
		if k.scope.SessionID == sessionID {
			delete(r.entries, k)
		}
	}
	for k := range r.calls {
		if k.scope.SessionID == sessionID {
			delete(r.calls, k)
		}
	}
}

// maxCallCounts bounds the per-key call counters Calls reads: keys carry
// the session, so they would otherwise grow with every session ever seen.
const maxCallCounts = 4096

// countCall counts a source call; r.mu must be held. Beyond maxCallCounts
// keys the counters start over.
func (r *Resolver) countCall(key cacheKey) {
	if _, ok := r.calls[key]; !ok && len(r.calls) >= maxCallCounts {
		clear(r.calls)
	}
	r.calls[key]++
}

// Calls reports how many times the source was called for the key that
// (source, ref, scope) maps to, for tests and benchmarks (counts of at most
// maxCallCounts keys are kept).
func (r *Resolver) Calls(source, ref string, scope Scope) int {
	src, ok := r.sources[source]
	if !ok {
		return 0
	}
	key := keyFor(source, src, Request{Scope: scope, Ref: ref})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[key]
}

// TotalCalls reports how many source calls the Resolver has made.
func (r *Resolver) TotalCalls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		n += c
	}
	return n
}

// Close cancels background calls, waits for them and makes later
// Resolves fail with ErrClosed. It is safe to call more than once.
func (r *Resolver) Close() error {
	r.mu.Lock()
	r.closed = true
	r.entries = make(map[cacheKey]*entry)
	r.mu.Unlock()
	r.stopFunc()
	r.wg.Wait()
	return nil
}

func keyFor(source string, src Source, req Request) cacheKey {
	scope := req.Scope
	if si, ok := src.(ScopeIndependent); ok && si.ScopeIndependent() {
		scope = Scope{}
	} else if cs, ok := src.(CacheScoper); ok {
		scope = cs.CacheScope(scope)
	}
	return cacheKey{source: source, ref: req.Ref, scope: scope}
}

// selfCaching reports whether the named source bypasses the cache.
func (r *Resolver) selfCaching(source string) bool {
	src, ok := r.sources[source]
	return ok && selfCaching(src)
}

func selfCaching(src Source) bool {
	sc, ok := src.(SelfCaching)
	return ok && sc.SelfCaching()
}

func expired(v Resolved, now time.Time) bool {
	return !v.Expiry.IsZero() && !now.Before(v.Expiry)
}
