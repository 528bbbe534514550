// Package hosterr owns the host's errors: the Kind of a failed call, the
// *Error with one text for each audience (operator and model), the
// sentinels callers branch on, the model's texts, and how a failure of the
// MCP connection becomes an *Error (FromCall). Package host re-exports the
// public names (host.Error, host.Kind, host.ErrDenied, ...).
package hosterr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/config"
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

// New builds an *Error: model is what the model is told, and the
// operator's Message is format and args as for fmt.Sprintf. model is a
// ModelMsg, not a string, so the two texts cannot be swapped: a format
// string (which names the server and tool) does not compile where the
// model's text goes, and a ModelMsg is not a format.
func New(kind Kind, model ModelMsg, err error, format string, args ...any) *Error {
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

	ErrRedactedEncoding = errors.New("secure values could not be encoded")
)

// ModelMsg is a text for the model (Error.ModelMessage). It is a struct, not
// a string type, so that no string, constant or literal, converts to it:
// every model text is one of the values or constructors below, where it can
// be checked for what it reveals.
type ModelMsg struct{ text string }

// String returns the text.
func (m ModelMsg) String() string { return m.text }

// Model-facing messages: generic on purpose (SEP-3221: the model has no
// visibility into secure parameters, and infrastructure details in its
// context invite hallucinated retries).
var (
	MsgNone             = ModelMsg{} // the error never reaches a model
	MsgInvalidArguments = ModelMsg{"The call was refused: invalid arguments. Do not retry it with the same arguments."}
	MsgOperatorFailure  = ModelMsg{"The tool could not be run because of a host configuration problem. The operator has been told; do not retry this call."}
	MsgUnavailable      = ModelMsg{"The tool is not available right now."}
	MsgSecretInArgs     = ModelMsg{"The call was refused: its arguments contain a value the host protects. Nothing was sent. Do not repeat protected values."}
	MsgDuplicateKey     = ModelMsg{"Invalid arguments: an object in the arguments repeats a key (duplicate key), so the call was not sent. Send each key once."}
	MsgCancelled        = ModelMsg{"The call was cancelled."}
	MsgTimeout          = ModelMsg{"The tool did not answer in time."}
	MsgBadResponse      = ModelMsg{"The tool's server sent an invalid response; the call may have run."}
	MsgConnectionLost   = ModelMsg{"The tool's server is unavailable right now; the call may not have run."}
	MsgServerError      = ModelMsg{"The tool's server answered with an error."}
	MsgAuthorization    = ModelMsg{"The tool's server requires the user to authorize access first; the user has been told. Do not retry this call now."}
	// MsgMaybeRan is what the model is told about a call that was sent
	// before the process stopped and whose result was lost, when the call
	// is not re-sent (its tool is not idempotent by a trusted source).
	MsgMaybeRan = ModelMsg{InterruptedCallResult}
)

// InterruptedCallResult is what the model is told, on resuming a
// conversation, about a tool call whose result never reached the transcript
// (the process stopped while it ran or waited for approval).
const InterruptedCallResult = "This call's result was lost: the session was interrupted before the call finished. " +
	"It may or may not have run; check before repeating it."

// MsgNotJSONObject tells the model why its arguments are not a JSON
// object (the decoder's message is about the JSON's syntax or shape).
func MsgNotJSONObject(err error) ModelMsg {
	return ModelMsg{"Invalid arguments: " + err.Error() + ". Send a JSON object that matches the tool's parameters."}
}

// MsgSchemaInvalid passes the inputSchema validator's message on, so
// the model can correct its call (validation runs after the secure-name
// guard, so the message echoes no secure name).
func MsgSchemaInvalid(err error) ModelMsg {
	return ModelMsg{"Invalid arguments: " + err.Error()}
}

// MsgServerErrorText passes on a server's error message, already
// redacted, cut to 300 bytes.
func MsgServerErrorText(redacted string) ModelMsg {
	return ModelMsg{"The tool's server answered with an error: " + Truncate(redacted, 300)}
}

// MsgFromApprovals is the approval workflow's text for the model
// (approvals.Result.ModelMessage, written for the model by that package).
func MsgFromApprovals(text string) ModelMsg {
	return ModelMsg{text}
}

// Truncate cuts s to at most n bytes at a character boundary, marking the
// cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// FromCall is a failed call's error as the host hands it on: an *Error of
// the right Kind, with a message for the operator (server text redacted)
// and one for the model (no server text when the call carried secure
// values).
func FromCall(redactor *bindings.Redactor, server, tool string, carriesSecure bool, err error) error {
	var ce *mcpconn.CallError
	if !errors.As(err, &ce) {
		return New(KindInternal, MsgOperatorFailure, err, "%s/%s: %v", server, tool, err)
	}
	switch ce.Failure {
	case mcpconn.FailUnavailable:
		return New(KindUnavailable, MsgUnavailable, ce.Err, "%v", ce.Err)
	case mcpconn.FailCancelled:
		return New(KindInternal, MsgCancelled, ce.Err, "%s/%s: cancelled", server, tool)
	case mcpconn.FailTimeout:
		if ce.Task != "" {
			return New(KindUnavailable, MsgTimeout, ce.Err, "%s/%s: its task %s did not finish within %s (taskTimeout); it was cancelled",
				server, tool, redactor.Redact(ce.Task), ce.Timeout)
		}
		return New(KindUnavailable, MsgTimeout, ce.Err, "%s/%s: no answer within %s", server, tool, ce.Timeout)
	case mcpconn.FailProtocol:
		var perr *mcpconn.ProtocolError
		errors.As(ce.Err, &perr)
		return New(KindToolError, MsgBadResponse, ce.Err, "%s/%s: %s", server, tool, perr.Error())
	case mcpconn.FailConnectionLost:
		return New(KindUnavailable, MsgConnectionLost, ce.Err,
			"%s/%s: connection lost: %s", server, tool, redactor.Redact(ce.Err.Error()))
	case mcpconn.FailToolGone:
		return New(KindUnavailable, MsgUnavailable, ErrToolUnavailable, "%s/%s is no longer offered by the server", server, tool)
	}
	code, message := 0, ce.Err.Error()
	if ce.RPC != nil {
		code, message = ce.RPC.Code, ce.RPC.Message
	}
	switch {
	case ce.Failure == mcpconn.FailSecureRejected:
		return New(KindBinding, MsgOperatorFailure, fmt.Errorf("%w: %w", ErrSecureRejected, ce.Err),
			"%s/%s: the server rejected the call's secure arguments (-32602): %s", server, tool, redactor.Redact(message))
	case code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY && slices.Contains(ce.RPC.RequiredExtensions(), config.TasksExtension):
		return New(KindConfig, MsgOperatorFailure, ce.Err,
			"%s/%s: the server runs the tool as a task and requires the Tasks extension (%s, -32021): set mcpServers.%s.tasks: auto",
			server, tool, config.TasksExtension, server)
	case code == mcp.MISSING_REQUIRED_CLIENT_CAPABILITY:
		fix := "check secureParams.extensions"
		if ids := ce.RPC.RequiredExtensions(); len(ids) > 0 {
			fix = fmt.Sprintf("the server requires the extension %s: add it to mcpServers.%s.secureParams.extensions (and bind the tool's secure parameters)",
				redactor.Redact(strings.Join(ids, ", ")), server)
		}
		return New(KindBinding, MsgOperatorFailure, ce.Err,
			"%s/%s: the server requires a client capability that was not negotiated (-32021): %s; %s", server, tool, redactor.Redact(message), fix)
	case carriesSecure:
		return New(KindToolError, MsgServerError, ce.Err,
			"%s/%s: server error %d: %s", server, tool, code, redactor.Redact(message))
	}
	safe := redactor.Redact(message)
	return New(KindToolError, MsgServerErrorText(safe), ce.Err,
		"%s/%s: server error %d: %s", server, tool, code, safe)
}

// NotOpened is the error for a config that names a store the program did
// not open.
func NotOpened(key, field string) error {
	return Config(fmt.Errorf("%s names a database, but this program opens none: build the host with compose.New and compose.Options.Databases (approvals/stores.Databases opens SQLite and PostgreSQL), or pass host.Options.%s (docs/config.md)", key, field))
}

// Config is err as a configuration error (KindConfig).
func Config(err error) error {
	return &Error{Kind: KindConfig, Message: err.Error(), Err: err}
}

// AuthorizationFailure is the failed authorization of one request: it
// concerns the request's subject only, not the connection other sessions
// share. The agent loop reports it to the model as such and, when AuthURL
// is set, emits an EventAuthorization.
type AuthorizationFailure struct {
	// Message says what failed, for the caller (never a token).
	Message string
	// Subject must authorize at AuthURL (empty: no login can help).
	Subject, AuthURL string
	Err              error
}

func (f *AuthorizationFailure) Error() string { return f.Err.Error() }
func (f *AuthorizationFailure) Unwrap() error { return f.Err }

// IsAuthorizationFailure marks the error for the connection layer, which
// keeps a connection an authorization failure came through.
func (f *AuthorizationFailure) IsAuthorizationFailure() bool { return true }

// AuthorizationMessage is the message of the authorization failure in
// err's chain.
func AuthorizationMessage(err error) string {
	if f, ok := errors.AsType[*AuthorizationFailure](err); ok {
		return f.Message
	}
	return err.Error()
}

// IsAuthorization reports whether err is an authorization failure
// (KindAuthorization).
func IsAuthorization(err error) bool {
	_, ok := errors.AsType[*AuthorizationFailure](err)
	return ok
}
