package secureparams

import (
	"encoding/json"

	"github.com/agenthost/agenthost/host/secureparams/internal/guard"
)

// MaxArgumentDepth bounds how deeply the model's arguments may nest. Deeper
// arguments are treated as naming every secure parameter: the guard would
// rather refuse a strange call than let one through unread.
const MaxArgumentDepth = guard.MaxArgumentDepth

// The call-time guard's errors (internal/guard owns them).
var (
	// ErrSecureNameInArguments means the model's arguments use the name of
	// a secure parameter. Its text names no field: the model may see it.
	ErrSecureNameInArguments = guard.ErrSecureNameInArguments
	// ErrArgumentsNotJSON means the model's arguments are not valid JSON.
	ErrArgumentsNotJSON = guard.ErrArgumentsNotJSON
	// ErrDuplicateKeyInArguments means an object in the model's arguments
	// repeats a member name (at any depth). Its text names no key.
	ErrDuplicateKeyInArguments = guard.ErrDuplicateKeyInArguments
)

// SecureNameError is returned by CheckArguments when the arguments use
// secure parameter names. Error() names none of them, so it can go back to
// the model; Names is for the audit record, which must note a possible
// prompt injection.
type SecureNameError = guard.SecureNameError

// FindSecureNames returns the secure names (sorted, without duplicates)
// that appear as an object key anywhere in args (see guard.FindSecureNames:
// case, compatibility forms, marks, invisible characters and separators
// are folded; string values never match). It fails closed: invalid JSON or
// nesting beyond MaxArgumentDepth returns every secure name.
func FindSecureNames(args json.RawMessage, secure []string) []string {
	return guard.FindSecureNames(args, secure)
}

// CheckArguments is the call-time guard, one pass over args: nil when they
// are fine; an error wrapping ErrArgumentsNotJSON when they are not JSON; a
// *SecureNameError (errors.Is ErrSecureNameInArguments) when they use a
// secure name or nest too deeply; otherwise ErrDuplicateKeyInArguments when
// an object repeats a key. A secure name outranks a repeated key.
func CheckArguments(args json.RawMessage, secure []string) error {
	return guard.CheckArguments(args, secure)
}

// CheckArguments is the package's CheckArguments for t's SecureParams,
// with the names prepared for matching once per definition rather than on
// every call.
func (t *Tool) CheckArguments(args json.RawMessage) error {
	return guard.Check(args, t.SecureParams, t.targets())
}

// CheckValidArguments is CheckArguments for args the caller already found
// valid JSON as json.Valid(args) decides it (the bytes around the value
// included; rules.ArgsCheck.ValidAsGiven says so): the guard does not
// validate them again. Any other arguments go to CheckArguments.
func (t *Tool) CheckValidArguments(args json.RawMessage) error {
	return guard.CheckValid(args, t.SecureParams, t.targets())
}

// targets are t's SecureParams prepared for matching, once per definition.
func (t *Tool) targets() []guard.Target {
	t.guardOnce.Do(func() { t.guardTargets = guard.Targets(t.SecureParams) })
	return t.guardTargets
}
