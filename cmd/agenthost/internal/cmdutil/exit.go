package cmdutil

import (
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/host"
)

// Exit codes (docs/cli.md).
const (
	ExitOK          = 0
	ExitError       = 1
	ExitUsage       = 2
	ExitDenied      = 3
	ExitBinding     = 4
	ExitToolError   = 5
	ExitUnavailable = 6
	ExitMaxSteps    = 7
	// ExitAuthorization: the server requires authorization and nobody can
	// log in here (no terminal, no $BROWSER), or the authorization failed.
	ExitAuthorization = 8
	ExitWouldAsk      = 10
	// ExitNoSuchApproval: no approval request has this id.
	ExitNoSuchApproval = 11
	// ExitVoteRefused: the vote did not count (the request is settled,
	// the approver already allowed it, or is its requester).
	ExitVoteRefused = 12
	// ExitChainBroken: `audit verify` found a broken audit chain.
	ExitChainBroken = 13
	// ExitInterrupted: the turn or the REPL ended at Ctrl-C.
	ExitInterrupted = 130
)

// ExitErr carries an exit code up to the root command; the message has
// already been printed when Printed is true.
type ExitErr struct {
	Code    int
	Err     error
	Printed bool
}

func (e *ExitErr) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitErr) Unwrap() error { return e.Err }

// Exit is an exit with code whose message was printed already (or that
// has none).
func Exit(code int) error { return &ExitErr{Code: code, Printed: true} }

// UsageErr is err with exit code 2.
func UsageErr(err error) error { return &ExitErr{Code: ExitUsage, Err: err} }

// CodeErr is err with the given exit code.
func CodeErr(code int, err error) error { return &ExitErr{Code: code, Err: err} }

// CodeOf is the exit code err carries, 2 (usage) for any other error.
func CodeOf(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		return ee.Code
	}
	return ExitUsage
}

// CodeFor maps a host error kind to the CLI's exit code.
func CodeFor(kind host.Kind) int {
	switch kind {
	case host.KindDenied:
		return ExitDenied
	case host.KindBinding:
		return ExitBinding
	case host.KindToolError:
		return ExitToolError
	case host.KindUnavailable:
		return ExitUnavailable
	case host.KindConfig:
		return ExitUsage
	case host.KindAuthorization:
		return ExitAuthorization
	default:
		return ExitError
	}
}

// HostErr maps a host error to its exit code, naming the config file for
// configuration errors.
func HostErr(file string, err error) error {
	kind := host.KindOf(err)
	if kind == host.KindConfig && file != "" {
		err = fmt.Errorf("%s: %w", file, err)
	}
	return &ExitErr{Code: CodeFor(kind), Err: err}
}

// Run is how a command's RunE ends: runF with the options when a test
// gave one (to capture them), else the command's own run.
func Run[O any](opts *O, runF, run func(*O) error) error {
	if runF != nil {
		return runF(opts)
	}
	return run(opts)
}
