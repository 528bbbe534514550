package host

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agenthost/agenthost/host/internal/mcpconn"
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
	// KindAuthorization: the server requires authorization (OAuth) that
	// nobody could give here, or the authorization failed (exit 8).
	KindAuthorization Kind = "authorization"
	KindInternal      Kind = "internal" // anything else (exit 1)
)

// Error is a tool-call failure, with one text for each audience. Message is
// for the operator: it names the server and tool and says what went wrong,
// and never contains a secure value. ModelMessage is what the model is told
// instead: short, naming no secure parameter, no server and no
// infrastructure detail; empty on errors that never reach a model (the
// agent loop then tells the model a generic operator-failure text). Err is
// the cause, for errors.Is and errors.As.
type Error struct {
	Kind         Kind
	Message      string
	ModelMessage string
	Err          error
}

// Error returns Message, or the wrapped error's text when Message is empty.
func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the underlying error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of the first *Error in err's chain, and
// KindInternal when there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// newError builds an *Error: model is what the model is told, and the
// operator's Message is format and args as for fmt.Sprintf. model is a
// modelMsg, not a string, so the two texts cannot be swapped: a format
// string (which names the server and tool) does not compile where the
// model's text goes, and a modelMsg is not a format.
func newError(kind Kind, model modelMsg, err error, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...), ModelMessage: model.text, Err: err}
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
	ErrServerUnavailable = mcpconn.ErrServerUnavailable
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

// modelMsg is a text for the model (Error.ModelMessage). It is a struct, not
// a string type, so that no string, constant or literal, converts to it:
// every model text is one of the values or constructors below, where it can
// be checked for what it reveals.
type modelMsg struct{ text string }

// String returns the text.
func (m modelMsg) String() string { return m.text }

// Model-facing messages: generic on purpose (SEP-3221: the model has no
// visibility into secure parameters, and infrastructure details in its
// context invite hallucinated retries).
var (
	modelMsgNone             = modelMsg{} // the error never reaches a model
	modelMsgInvalidArguments = modelMsg{"The call was refused: invalid arguments. Do not retry it with the same arguments."}
	modelMsgOperatorFailure  = modelMsg{"The tool could not be run because of a host configuration problem. The operator has been told; do not retry this call."}
	modelMsgUnavailable      = modelMsg{"The tool is not available right now."}
	modelMsgSecretInArgs     = modelMsg{"The call was refused: its arguments contain a value the host protects. Nothing was sent. Do not repeat protected values."}
	modelMsgDuplicateKey     = modelMsg{"Invalid arguments: an object in the arguments repeats a key (duplicate key), so the call was not sent. Send each key once."}
	modelMsgCancelled        = modelMsg{"The call was cancelled."}
	modelMsgTimeout          = modelMsg{"The tool did not answer in time."}
	modelMsgBadResponse      = modelMsg{"The tool's server sent an invalid response; the call may have run."}
	modelMsgConnectionLost   = modelMsg{"The tool's server is unavailable right now; the call may not have run."}
	modelMsgServerError      = modelMsg{"The tool's server answered with an error."}
	modelMsgAuthorization    = modelMsg{"The tool's server requires the user to authorize access first; the user has been told. Do not retry this call now."}
)

// modelMsgNotJSONObject tells the model why its arguments are not a JSON
// object (the decoder's message is about the JSON's syntax or shape).
func modelMsgNotJSONObject(err error) modelMsg {
	return modelMsg{"Invalid arguments: " + err.Error() + ". Send a JSON object that matches the tool's parameters."}
}

// modelMsgSchemaInvalid passes the inputSchema validator's message on, so
// the model can correct its call (validation runs after the secure-name
// guard, so the message echoes no secure name).
func modelMsgSchemaInvalid(err error) modelMsg {
	return modelMsg{"Invalid arguments: " + err.Error()}
}

// modelMsgServerErrorText passes on a server's error message, already
// redacted, cut to 300 bytes.
func modelMsgServerErrorText(redacted string) modelMsg {
	return modelMsg{"The tool's server answered with an error: " + truncate(redacted, 300)}
}

// modelMsgFromApprovals is the approval workflow's text for the model
// (approvals.Result.ModelMessage, written for the model by that package).
func modelMsgFromApprovals(text string) modelMsg {
	return modelMsg{text}
}

// truncate cuts s to at most n bytes at a character boundary, marking the
// cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
