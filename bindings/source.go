// Package bindings owns everything that supplies secure parameter values
// (SEP-3221 secureArguments): the Source interface, the built-in sources
// (literal, env, file, session), the resolver that caches and refreshes
// values, and the redactor that keeps resolved secrets out of every log,
// error, event and audit record.
package bindings

import (
	"context"
	"encoding/json"
	"time"
)

// Sensitivity says how carefully a resolved value must be kept out of
// output. Secret and Internal values are registered with the Redactor.
type Sensitivity int

// Sensitivities, from least to most careful.
const (
	Public Sensitivity = iota
	Internal
	Secret
)

// Scope identifies who a value is resolved for. Sources use it to pick
// tenant-specific values; the resolver uses it as part of its cache key.
type Scope struct {
	SessionID string
	Subject   string // the user or tenant the session acts for
	Server    string
	Tool      string
	Param     string
}

// Request asks a Source for one secure value.
type Request struct {
	Scope
	// Ref is the configured reference (e.g. "orders/token"); for the
	// built-ins it is the env var name, file path or session value name.
	Ref string
	// Schema is the parameter's schema from secureInputSchema (may be nil).
	Schema json.RawMessage
}

// Resolved is one value a Source supplied.
type Resolved struct {
	Value string
	// Expiry is when the value stops being valid; zero means never.
	Expiry      time.Time
	Sensitivity Sensitivity
}

// Source supplies secure values. Implementations must be safe for
// concurrent use and must honour ctx cancellation.
type Source interface {
	Resolve(ctx context.Context, req Request) (Resolved, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, req Request) (Resolved, error)

// Resolve calls f.
func (f SourceFunc) Resolve(ctx context.Context, req Request) (Resolved, error) { return f(ctx, req) }
