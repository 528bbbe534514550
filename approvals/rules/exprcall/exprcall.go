// Package exprcall is the seam between the approval rules and the engine
// of their expressions (when.expr): what an expression is evaluated over,
// and what an engine gives. approvals/rules compiles and runs expressions
// through an Engine; approvals/rules/celexpr is the CEL one. It is its own
// leaf so that the rules link no engine: a program that uses none (the
// lean agenthost build) links no CEL.
package exprcall

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
)

// MaxLength bounds the source of one expression, in code points.
const MaxLength = 4096

// Engine compiles expressions.
type Engine interface {
	// Compile parses, type-checks and plans src, whose result must be a
	// bool; the error says why it cannot be.
	Compile(src string) (Expr, error)
}

// Expr is one compiled expression. It is safe for concurrent use.
type Expr interface {
	// ReadsArgs reports whether the expression reads the call's
	// arguments, so that a call with other arguments may get another
	// answer.
	ReadsArgs() bool
	// Eval evaluates the expression over c. An error (a missing key, a
	// type mismatch, the cost budget exceeded, a result that is not a
	// bool, arguments it cannot read) is returned as such; the caller
	// decides what it means.
	Eval(ctx context.Context, c *Call) (bool, error)
}

// Call is one tool call, as expressions see it. The expressions of one
// call share it; Cache is the engine's, for what it computes once per
// call (the decoded arguments).
type Call struct {
	Server, Tool string
	// Risk is the effective metadata after the call-time escalators.
	Risk *risk.Effective
	// SessionID, Subject, Trust (clamped), SessionValues (the names of
	// the session's values) and ResultLabels describe the session.
	SessionID, Subject string
	Trust              int
	SessionValues      []string
	ResultLabels       []string
	// Args are the model's arguments as sent.
	Args json.RawMessage
	// Now is the time the call is decided at.
	Now time.Time

	Cache any
}
