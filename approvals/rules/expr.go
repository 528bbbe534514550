package rules

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules/exprcall"
)

// Rule expressions (when.expr) are compiled once when the policy is built
// and evaluated at call time, only for rules whose other conditions already
// match, by the engine the program registered (UseExprEngine): CEL, with
// approvals/rules/celexpr (docs/config.md lists its variables and
// functions). The rules link no engine: a program that registers none
// (the lean agenthost build) links no CEL.

// MaxExprLength bounds the source of one expression, in code points.
const MaxExprLength = exprcall.MaxLength

// ErrNoExprEngine says a rule has a when.expr but the program registered
// no expression engine (UseExprEngine).
var ErrNoExprEngine = errors.New("no expression engine: the program registers one with rules.UseExprEngine(celexpr.Engine{}) (package approvals/rules/celexpr)")

// engine is the registered expression engine.
var engine atomic.Pointer[exprcall.Engine]

// UseExprEngine registers the engine of rule expressions, once at the
// start of the program, before any configuration is validated or policy
// built (as database/sql drivers register). Without one, Validate leaves
// when.expr unchecked and NewPolicy fails with ErrNoExprEngine for a rule
// that has one.
func UseExprEngine(e exprcall.Engine) { engine.Store(&e) }

// exprEngine is the registered engine, nil when none is.
func exprEngine() exprcall.Engine {
	if e := engine.Load(); e != nil {
		return *e
	}
	return nil
}

// compiledExpr is one compiled rule expression and its source.
type compiledExpr struct {
	src string
	x   exprcall.Expr
	// readsArgs: the expression reads the call's arguments, so a call
	// with other arguments may get another answer.
	readsArgs bool
}

// compileExpr compiles one expression with the registered engine
// (ErrNoExprEngine without one).
func compileExpr(src string) (*compiledExpr, error) {
	e := exprEngine()
	if e == nil {
		return nil, ErrNoExprEngine
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("empty expression")
	}
	if n := len([]rune(src)); n > MaxExprLength {
		return nil, fmt.Errorf("expression is %d characters long, more than %d", n, MaxExprLength)
	}
	x, err := e.Compile(src)
	if err != nil {
		return nil, err
	}
	return &compiledExpr{src: src, x: x, readsArgs: x.ReadsArgs()}, nil
}

// eval runs the expression over in. An error (a missing key, a type
// mismatch, the cost budget exceeded, a result that is not a bool,
// arguments it cannot read) is returned as such; the caller decides what
// it means.
func (x *compiledExpr) eval(ctx context.Context, in *exprInput) (bool, error) {
	return x.x.Eval(ctx, &in.call)
}

// exprInput is what one call's expressions are evaluated over.
type exprInput struct {
	ctx  context.Context
	call exprcall.Call

	// errs collects "rule id: error" for each expression that failed.
	errs []string
}

// newExprInput is the input for call c, with risk its effective metadata
// after the call-time escalators and trust its clamped trust.
func (p *Policy) newExprInput(ctx context.Context, c *Call, risk *risk.Effective, trust int) *exprInput {
	now := c.Now
	if now.IsZero() {
		now = time.Now()
	}
	return &exprInput{ctx: ctx, call: exprcall.Call{Server: c.Server, Tool: c.Tool, Risk: risk,
		SessionID: c.SessionID, Subject: c.Subject, Trust: trust, SessionValues: c.SessionValues,
		ResultLabels: c.ResultLabels, Args: c.Args, Now: now}}
}
