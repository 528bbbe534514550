package host

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host/secureparams"
)

// Kind classifies a failed tool call. The CLI maps each kind to an exit code
// and to the "kind" of its JSON error object (docs/cli.md).
type Kind string

// The kinds of failure, one per exit code.
const (
	KindDenied      Kind = "denied"      // policy, approver, trust level, timeout (exit 3)
	KindBinding     Kind = "binding"     // secure parameters (exit 4)
	KindToolError   Kind = "tool_error"  // isError result or server error answer (exit 5)
	KindUnavailable Kind = "unavailable" // unreachable server, unknown/excluded/hidden tool (exit 6)
	KindConfig      Kind = "config"      // configuration (exit 2)
	KindInternal    Kind = "internal"    // anything else (exit 1)
)

// Error is a tool-call failure. Message is safe to show to the operator and
// never contains a secure value; ModelMessage is the short generic text the
// model is given instead (it names no secure parameter and no infrastructure
// detail).
type Error struct {
	Kind         Kind
	Message      string
	ModelMessage string
	Err          error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err, KindInternal when it is not an *Error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

func newError(kind Kind, model string, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), ModelMessage: model, Err: err}
}

// Sentinel errors callers may branch on with errors.Is.
var (
	// ErrUnknownServer: the call names a server that is not configured.
	ErrUnknownServer = errors.New("unknown server")
	// ErrAuditFailed: the call's audit record could not be written (the
	// error says whether the call was sent); the host runs no un-audited
	// call.
	ErrAuditFailed = errors.New("audit record not written")
	// ErrToolUnavailable: the tool is not listed, excluded or hidden.
	ErrToolUnavailable = errors.New("tool not available")
	// ErrServerUnavailable: the server cannot be reached.
	ErrServerUnavailable = errors.New("server unavailable")
	// ErrSecureRejected: the server rejected the call's secure arguments
	// (-32602 to a call that carried them).
	ErrSecureRejected = errors.New("server rejected the secure arguments")
	// ErrDenied: the approval workflow refused the call.
	ErrDenied = errors.New("call denied")
	// ErrSecureNameInArguments: the model's arguments name a secure
	// parameter. It is secureparams' sentinel (the guard owns the rule).
	ErrSecureNameInArguments = secureparams.ErrSecureNameInArguments
	// ErrDuplicateKeyInArguments: an object in the model's arguments
	// repeats a key; the call is refused and nothing is sent.
	ErrDuplicateKeyInArguments = secureparams.ErrDuplicateKeyInArguments
	// ErrSecretInArguments: the model's arguments hold a value the host
	// protects (a secure value resolved in this process), in any spelling.
	ErrSecretInArguments = errors.New("arguments hold a host-protected value")

	errRedactedEncoding = errors.New("secure values could not be encoded")
)

// Model-facing messages: generic on purpose (SEP-3221: the model has no
// visibility into secure parameters, and infrastructure details in its
// context invite hallucinated retries).
const (
	modelMsgInvalidArguments = "The call was refused: invalid arguments. Do not retry it with the same arguments."
	modelMsgOperatorFailure  = "The tool could not be run because of a host configuration problem. The operator has been told; do not retry this call."
	modelMsgUnavailable      = "The tool is not available right now."
	modelMsgSecretInArgs     = "The call was refused: its arguments contain a value the host protects. Nothing was sent. Do not repeat protected values."
	modelMsgDuplicateKey     = "Invalid arguments: an object in the arguments repeats a key (duplicate key), so the call was not sent. Send each key once."
)
