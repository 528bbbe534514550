package bindings

import (
	"log/slog"
	"time"
)

// Defaults for the resolver's knobs.
const (
	DefaultCallTimeout      = 10 * time.Second
	DefaultNegativeTTL      = 2 * time.Second
	DefaultMaxRefreshWindow = 5 * time.Minute
)

// Option configures a Resolver or a Binder (which passes it on to the
// Resolver it owns).
type Option func(*settings)

type settings struct {
	clock            Clock
	callTimeout      time.Duration
	negativeTTL      time.Duration
	maxRefreshWindow time.Duration
	redactor         *Redactor
	logger           *slog.Logger
	observer         ResolveObserver
}

func newSettings(opts []Option) settings {
	s := settings{
		clock:            SystemClock{},
		callTimeout:      DefaultCallTimeout,
		negativeTTL:      DefaultNegativeTTL,
		maxRefreshWindow: DefaultMaxRefreshWindow,
	}
	for _, o := range opts {
		o(&s)
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// WithClock sets the clock used for expiry, refresh and negative caching.
func WithClock(c Clock) Option {
	return func(s *settings) {
		if c != nil {
			s.clock = c
		}
	}
}

// WithCallTimeout bounds each source call (default 10s). Zero or negative
// keeps the default.
func WithCallTimeout(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.callTimeout = d
		}
	}
}

// WithNegativeTTL sets how long a source failure is remembered and
// returned without calling the source again (default 2s). Negative turns
// negative caching off.
func WithNegativeTTL(d time.Duration) Option {
	return func(s *settings) { s.negativeTTL = max(d, 0) }
}

// WithMaxRefreshWindow caps how long before expiry a value is refreshed
// (default 5m; the window is min(cap, lifetime/3)).
func WithMaxRefreshWindow(d time.Duration) Option {
	return func(s *settings) {
		if d > 0 {
			s.maxRefreshWindow = d
		}
	}
}

// WithRedactor sets the Redactor that resolved internal and secret values
// are registered with. A Binder creates its own when none is given.
func WithRedactor(r *Redactor) Option {
	return func(s *settings) { s.redactor = r }
}

// WithLogger sets where background refresh failures are reported (names
// and redacted errors only). The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(s *settings) { s.logger = l }
}
