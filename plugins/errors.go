package plugins

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agenthost/agenthost/plugins/sdk"
)

// Errors callers branch on. Every error a Source returns wraps one of these
// (or a context error when the caller's context ended).
var (
	// ErrChecksum: the executable does not match Options.Checksum, or could
	// not be read to check it. The plugin was not executed.
	ErrChecksum = errors.New("plugin checksum mismatch")
	// ErrHandshake: the process started but did not complete the go-plugin
	// handshake (wrong magic cookie, wrong protocol version, not a gRPC
	// plugin, or it printed to stdout before the handshake line).
	ErrHandshake = errors.New("plugin handshake failed")
	// ErrMagicCookie: the plugin refused the host's magic cookie; it was
	// built for another host or is not an agenthost credential plugin.
	ErrMagicCookie = errors.New("plugin rejected the magic cookie")
	// ErrProtocolVersion: host and plugin speak different protocol versions.
	ErrProtocolVersion = errors.New("plugin protocol version mismatch")
	// ErrStartTimeout: the plugin did not complete its handshake in time.
	ErrStartTimeout = errors.New("plugin start timed out")
	// ErrStart: the plugin could not be started for another reason (it
	// exited early, could not be executed, failed Describe).
	ErrStart = errors.New("plugin failed to start")
	// ErrConfigure: the plugin rejected its configuration.
	ErrConfigure = errors.New("plugin rejected its configuration")
	// ErrCircuitOpen: the plugin failed to start (or crashed) too many times
	// in a row; calls fail fast until the cool-down passes.
	ErrCircuitOpen = errors.New("plugin circuit breaker open")
	// ErrRestartBackoff: the plugin is waiting out its restart back-off and
	// the caller's context ends before the next attempt is allowed.
	ErrRestartBackoff = errors.New("plugin restart back-off")
	// ErrPluginExited: the plugin process died or its connection broke
	// during the call. The next call restarts it.
	ErrPluginExited = errors.New("plugin exited during the call")
	// ErrCallTimeout: the plugin did not answer within Options.CallTimeout.
	ErrCallTimeout = errors.New("plugin call timed out")
	// ErrClosed: the Source was closed.
	ErrClosed = errors.New("plugin source closed")
	// ErrPlugin: the plugin answered the call with an error of its own.
	ErrPlugin = errors.New("plugin returned an error")
	// ErrUnknownRef: the plugin does not know the ref. Same value as
	// sdk.ErrUnknownRef, so both sides of the protocol share one sentinel.
	ErrUnknownRef = sdk.ErrUnknownRef
)

// StartError reports a failed plugin start. It wraps the sentinel in Reason
// (ErrChecksum, ErrHandshake, ...) and carries the last lines the plugin
// wrote to stderr, already redacted.
type StartError struct {
	Plugin string
	// Reason is the sentinel errors.Is matches; for handshake problems it
	// may itself wrap a more specific sentinel such as ErrProtocolVersion.
	Reason error
	// Detail explains what happened, in words for the operator.
	Detail string
	// StderrTail is the plugin's last stderr lines, redacted.
	StderrTail []string
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "plugin %s: %v", e.Plugin, e.Reason)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if len(e.StderrTail) > 0 {
		fmt.Fprintf(&b, "\nlast %d line(s) of plugin stderr:", len(e.StderrTail))
		for _, l := range e.StderrTail {
			b.WriteString("\n  ")
			b.WriteString(l)
		}
	}
	return b.String()
}

// Unwrap returns Reason.
func (e *StartError) Unwrap() error { return e.Reason }
