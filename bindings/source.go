// Package bindings owns everything that supplies secure parameter values
// (SEP-3221 secureArguments): the Source interface, the built-in sources
// (literal, env, file, session), the resolver that caches and refreshes
// values, and the redactor that keeps resolved secrets out of every log,
// error, event and audit record.
package bindings

import "github.com/agenthost/agenthost/bindings/contract"

// The credential source contract lives in bindings/contract, which a
// plugin links without the rest of this package; its names are this
// package's too.

// Sensitivity says how carefully a resolved value must be kept out of
// output. Secret and Internal values are registered with the Redactor.
type Sensitivity = contract.Sensitivity

// Sensitivities, from least to most careful.
const (
	Public   = contract.Public
	Internal = contract.Internal
	Secret   = contract.Secret
)

// Scope identifies who a value is resolved for. Sources use it to pick
// tenant-specific values; the resolver uses it as part of its cache key.
type Scope = contract.Scope

// Request asks a Source for one secure value.
type Request = contract.Request

// Resolved is one value a Source supplied.
type Resolved = contract.Resolved

// Source supplies secure values. Implementations must be safe for
// concurrent use and must honour ctx cancellation.
type Source = contract.Source

// SourceFunc adapts a function to Source.
type SourceFunc = contract.SourceFunc

// ParseSensitivity parses "public", "internal" or "secret".
func ParseSensitivity(name string) (Sensitivity, error) { return contract.ParseSensitivity(name) }
