package bindings

import (
	"context"
	"time"
)

// CacheOutcome says how the resolver answered one Resolve.
type CacheOutcome string

// Cache outcomes of a Resolve.
const (
	// CacheHit: a cached, still valid value was served.
	CacheHit CacheOutcome = "hit"
	// CacheMiss: the source was called, or a call already in flight for
	// the same key was joined.
	CacheMiss CacheOutcome = "miss"
	// CacheBypass: a self-caching source (the built-ins) was asked
	// directly; such sources are never cached.
	CacheBypass CacheOutcome = "bypass"
	// CacheNegative: a failure remembered for the negative TTL was
	// returned without calling the source.
	CacheNegative CacheOutcome = "negative"
)

// ResolveEvent describes one Resolve for telemetry. It holds names, the
// cache outcome and timing only: never a value, never the binding's ref
// (a literal binding's ref is its value, and a secret store's path may be
// sensitive), never the session id or subject.
type ResolveEvent struct {
	// Source is the source's name as bindings use it (`env`, `vault`).
	Source string
	// Server, Tool and Param name the secure parameter being filled.
	Server, Tool, Param string
	Cache               CacheOutcome
	Start               time.Time
	Duration            time.Duration
	// Failed is set when the Resolve returned an error (its text is not
	// given: it is for operator logs, after redaction).
	Failed bool
}

// ResolveObserver is told about every Resolve once it returns, with the
// caller's context (so a tracer can parent a span on the call that needed
// the value). It runs on the caller's goroutine and must return quickly.
type ResolveObserver func(ctx context.Context, e ResolveEvent)

// WithResolveObserver sets the function told about every Resolve (see
// ResolveEvent). Nil, the default, observes nothing and costs nothing.
func WithResolveObserver(o ResolveObserver) Option {
	return func(s *settings) { s.observer = o }
}
