package host

import "github.com/agenthost/agenthost/host/internal/hosterr"

// Kind classifies a failed tool call. The CLI maps each kind to an exit code
// and to the "kind" of its JSON error object (docs/cli.md).
type Kind = hosterr.Kind

// The kinds of failure, one per exit code.
const (
	KindDenied      = hosterr.KindDenied      // policy, approver, trust level, timeout (exit 3)
	KindBinding     = hosterr.KindBinding     // secure parameters (exit 4)
	KindToolError   = hosterr.KindToolError   // isError result or server error answer (exit 5)
	KindUnavailable = hosterr.KindUnavailable // unreachable server, unknown/excluded/hidden tool (exit 6)
	KindConfig      = hosterr.KindConfig      // configuration (exit 2)
	// KindAuthorization: the server requires authorization (OAuth) that
	// nobody could give here, or the authorization failed (exit 8).
	KindAuthorization = hosterr.KindAuthorization
	KindInternal      = hosterr.KindInternal // anything else (exit 1)
)

// Error is a tool-call failure, with one text for each audience: Message
// for the operator (never a secure value), ModelMessage for the model
// (naming no secure parameter, server or infrastructure detail), Err the
// cause, for errors.Is and errors.As.
type Error = hosterr.Error

// KindOf returns the kind of the first *Error in err's chain, and
// KindInternal when there is none.
func KindOf(err error) Kind { return hosterr.KindOf(err) }

// Sentinel errors callers may branch on with errors.Is.
var (
	// ErrUnknownServer: the call names a server that is not configured.
	ErrUnknownServer = hosterr.ErrUnknownServer
	// ErrAuditFailed: the call's audit record could not be written (the
	// error says whether the call was sent); the host runs no un-audited
	// call.
	ErrAuditFailed = hosterr.ErrAuditFailed
	// ErrToolUnavailable: the tool is not listed, excluded or hidden.
	ErrToolUnavailable = hosterr.ErrToolUnavailable
	// ErrServerUnavailable: the server cannot be reached.
	ErrServerUnavailable = hosterr.ErrServerUnavailable
	// ErrSecureRejected: the server rejected the call's secure arguments
	// (-32602 to a call that carried them).
	ErrSecureRejected = hosterr.ErrSecureRejected
	// ErrDenied: the approval workflow refused the call.
	ErrDenied = hosterr.ErrDenied
	// ErrSecureNameInArguments: the model's arguments name a secure
	// parameter. It is secureparams' sentinel (the guard owns the rule).
	ErrSecureNameInArguments = hosterr.ErrSecureNameInArguments
	// ErrDuplicateKeyInArguments: an object in the model's arguments
	// repeats a key; the call is refused and nothing is sent.
	ErrDuplicateKeyInArguments = hosterr.ErrDuplicateKeyInArguments
	// ErrSecretInArguments: the model's arguments hold a value the host
	// protects (a secure value resolved in this process), in any spelling.
	ErrSecretInArguments = hosterr.ErrSecretInArguments
)
