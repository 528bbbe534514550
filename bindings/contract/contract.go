// Package contract is the credential source contract on its own: the
// Source interface and the values it takes and returns. It imports nothing
// of agenthost, so that a credential plugin (plugins/sdk and its wire code)
// links this and not the resolver, the redactor or the configuration;
// package bindings re-exports every name here.
package contract

import (
	"context"
	"encoding/json"
	"fmt"
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

// String returns the config spelling: "public", "internal" or "secret".
func (s Sensitivity) String() string {
	switch s {
	case Public:
		return "public"
	case Internal:
		return "internal"
	case Secret:
		return "secret"
	}
	return fmt.Sprintf("Sensitivity(%d)", int(s))
}

// MarshalText writes the config spelling, so JSON output of a Spec reads
// "secret" rather than 2.
func (s Sensitivity) MarshalText() ([]byte, error) {
	if s < Public || s > Secret {
		return nil, fmt.Errorf("invalid sensitivity %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText accepts the config spelling.
func (s *Sensitivity) UnmarshalText(b []byte) error {
	v, err := ParseSensitivity(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseSensitivity parses "public", "internal" or "secret".
func ParseSensitivity(name string) (Sensitivity, error) {
	switch name {
	case "public":
		return Public, nil
	case "internal":
		return Internal, nil
	case "secret":
		return Secret, nil
	}
	return Public, fmt.Errorf("unknown sensitivity %q (want public, internal or secret)", name)
}
