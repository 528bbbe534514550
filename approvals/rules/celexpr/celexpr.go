// Package celexpr is the CEL engine (https://cel.dev) of the approval
// rules' expressions (when.expr): the variables of a call, the functions
// (the strings and network extensions, urlHost), the cost budget and the
// bounds on the arguments an expression reads (docs/config.md lists them).
// A program registers it with rules.UseExprEngine(celexpr.Engine{}); one
// that does not (the lean agenthost build) links no CEL.
package celexpr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/agenthost/agenthost/approvals/rules/exprcall"
)

// Rule expressions (when.expr) are CEL over the call: the tool, the
// model's arguments, the session and the time. They are compiled once when
// the policy is built and evaluated at call time, only for rules whose
// other conditions already match.

// Limits of rule expressions.
const (
	// MaxExprLength bounds the source of one expression, in code points.
	MaxExprLength = exprcall.MaxLength
	// ExprCostLimit is the evaluation budget of one expression, in CEL
	// cost units (about one per operation, plus the length of strings
	// scanned); an expression that exceeds it fails to evaluate. It is
	// calibrated to time, not operations: cel-go's cost tracking itself
	// grows with the square of the steps an evaluation takes, so the
	// budget's worst expression costs a few milliseconds of CPU at 10,000
	// units, about 0.3 s at 50,000 and seconds at 100,000
	// (BenchmarkExprWorstCase measures it).
	ExprCostLimit = 10_000
	// MaxExprArgsBytes and MaxExprArgsValues bound the arguments an
	// expression may read: their JSON text, and the JSON values in it
	// (every object, array, string, number, boolean and null, nested
	// ones included). An expression that reads args fails on bigger
	// arguments, with its rule's failure reading (never an allow).
	MaxExprArgsBytes  = 1 << 20
	MaxExprArgsValues = 10_000
)

// Variables of a rule expression. Each is a declared name of its own, so a
// misspelt field (tool.nmae) is a compile error, not a runtime one.
const (
	exprToolServer        = "tool.server"
	exprToolName          = "tool.name"
	exprToolUnclassified  = "tool.unclassified"
	exprRiskCategory      = "tool.risk.category"
	exprRiskLevel         = "tool.risk.riskLevel"
	exprRiskBlastRadius   = "tool.risk.blastRadius"
	exprRiskReversibility = "tool.risk.reversibility"
	exprRiskApproval      = "tool.risk.approvalRecommendation"
	exprRiskSideEffects   = "tool.risk.sideEffects"
	exprRiskMinTrust      = "tool.risk.minTrustLevel"
	exprArgs              = "args"
	exprSessionID         = "session.id"
	exprSessionSubject    = "session.subject"
	exprSessionTrust      = "session.trustLevel"
	exprSessionValues     = "session.values"
	exprSessionLabels     = "session.resultLabels"
	exprNow               = "now"
)

// exprEnv is the one CEL environment of rule expressions (building one
// costs milliseconds; it is immutable and shared).
var exprEnv = sync.OnceValues(func() (*cel.Env, error) {
	str, strList := cel.StringType, cel.ListType(cel.StringType)
	return cel.NewEnv(
		cel.Variable(exprToolServer, str),
		cel.Variable(exprToolName, str),
		cel.Variable(exprToolUnclassified, cel.BoolType),
		cel.Variable(exprRiskCategory, str),
		cel.Variable(exprRiskLevel, str),
		cel.Variable(exprRiskBlastRadius, str),
		cel.Variable(exprRiskReversibility, str),
		cel.Variable(exprRiskApproval, str),
		cel.Variable(exprRiskSideEffects, strList),
		cel.Variable(exprRiskMinTrust, cel.IntType),
		cel.Variable(exprArgs, cel.MapType(str, cel.DynType)),
		cel.Variable(exprSessionID, str),
		cel.Variable(exprSessionSubject, str),
		cel.Variable(exprSessionTrust, cel.IntType),
		cel.Variable(exprSessionValues, strList),
		cel.Variable(exprSessionLabels, strList),
		cel.Variable(exprNow, cel.TimestampType),
		ext.Strings(),
		ext.Network(),
		cel.OptionalTypes(),
		cel.Function("urlHost",
			cel.Overload("urlHost_string", []*cel.Type{str}, str,
				cel.UnaryBinding(func(v ref.Val) ref.Val {
					s, ok := v.(types.String)
					if !ok {
						return types.MaybeNoSuchOverloadErr(v)
					}
					return types.String(URLHost(string(s)))
				}))),
		cel.ParserExpressionSizeLimit(MaxExprLength),
		cel.ParserRecursionLimit(100),
	)
})

// URLHost (urlHost in an expression) is the host name of an absolute http or https URL, lower-cased,
// without port or brackets; "" when s is not such a URL with a host, when
// it carries user information (http://localhost@evil.example is not local),
// or when its scheme is any other: a rule comparing the host with
// "localhost" must not allow javascript://localhost/%0A..., file://localhost/
// or ws://localhost:9222 (a browser's debugging port).
func URLHost(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || u.User != nil {
		return ""
	}
	if sch := strings.ToLower(u.Scheme); sch != "http" && sch != "https" {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// Engine is the CEL engine of rule expressions; it is an exprcall.Engine.
type Engine struct{}

// expr is one compiled rule expression.
type expr struct {
	prg cel.Program
	// readsArgs: the expression reads the call's arguments, so a call
	// with other arguments may get another answer.
	readsArgs bool
}

// ReadsArgs implements exprcall.Expr.
func (x *expr) ReadsArgs() bool { return x.readsArgs }

// Compile parses, type-checks and plans one expression. The result must
// be a bool (or dyn, checked at evaluation).
func (Engine) Compile(src string) (exprcall.Expr, error) {
	env, err := exprEnv()
	if err != nil {
		return nil, fmt.Errorf("expression environment: %w", err)
	}
	// An empty or too long source never gets here: the rules refuse it
	// before they ask an engine (rules.compileExpr), and the parser's
	// size limit is the same bound.
	checked, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, errors.New(strings.TrimSpace(iss.Err().Error()))
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("the expression gives %s, not bool", t)
	}
	prg, err := env.Program(checked,
		cel.CostLimit(ExprCostLimit),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("planning the expression: %w", err)
	}
	return &expr{prg: prg, readsArgs: referencesVariable(checked, exprArgs)}, nil
}

// referencesVariable reports whether the checked expression reads the
// variable name anywhere. A comprehension variable spelled the same
// counts too: the answer errs towards "reads it", which only adds a rule
// to argumentRules.
func referencesVariable(checked *cel.Ast, name string) bool {
	for _, ref := range checked.NativeRep().ReferenceMap() {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// Eval implements exprcall.Expr: it runs the expression over c, whose
// arguments are decoded once for all its expressions (c.Cache).
func (x *expr) Eval(ctx context.Context, c *exprcall.Call) (bool, error) {
	in, _ := c.Cache.(*activation)
	if in == nil {
		in = &activation{Call: c}
		c.Cache = in
	}
	if x.readsArgs {
		// Arguments that are not an object, or bigger than the bounds,
		// fail the whole expression: an error value would let CEL's
		// commutative || and && decide around it.
		if _, err := in.arguments(); err != nil {
			return false, err
		}
	}
	out, _, err := x.prg.ContextEval(ctx, in)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("the expression gave %s, not bool", out.Type())
	}
	return bool(b), nil
}

// activation is the activation of one call's expressions: every variable
// is computed when an expression first asks for it, the arguments decoded
// once per call.
type activation struct {
	*exprcall.Call

	argsDone bool
	args     ref.Val
	argsErr  error
}

var _ interpreter.Activation = (*activation)(nil)

// ResolveName implements interpreter.Activation.
func (in *activation) ResolveName(name string) (any, bool) {
	switch name {
	case exprToolServer:
		return types.String(in.Server), true
	case exprToolName:
		return types.String(in.Tool), true
	case exprToolUnclassified:
		return types.Bool(in.Risk.Unclassified), true
	case exprRiskCategory:
		return types.String(in.Risk.Category), true
	case exprRiskLevel:
		return types.String(in.Risk.RiskLevel), true
	case exprRiskBlastRadius:
		return types.String(in.Risk.BlastRadius), true
	case exprRiskReversibility:
		return types.String(in.Risk.Reversibility), true
	case exprRiskApproval:
		return types.String(in.Risk.ApprovalRecommendation), true
	case exprRiskSideEffects:
		return types.DefaultTypeAdapter.NativeToValue(nonNilStrings(in.Risk.SideEffects)), true
	case exprRiskMinTrust:
		return types.Int(in.Risk.MinTrustLevel), true
	case exprArgs:
		v, err := in.arguments()
		if err != nil {
			return types.NewErr("%s", err.Error()), true
		}
		return v, true
	case exprSessionID:
		return types.String(in.SessionID), true
	case exprSessionSubject:
		return types.String(in.Subject), true
	case exprSessionTrust:
		return types.Int(in.Trust), true
	case exprSessionValues:
		return types.DefaultTypeAdapter.NativeToValue(nonNilStrings(in.SessionValues)), true
	case exprSessionLabels:
		return types.DefaultTypeAdapter.NativeToValue(nonNilStrings(in.ResultLabels)), true
	case exprNow:
		return types.Timestamp{Time: in.Now}, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (in *activation) Parent() interpreter.Activation { return nil }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// arguments is the call's arguments as a CEL map, decoded on first use
// and kept for the call's other expressions.
func (in *activation) arguments() (ref.Val, error) {
	if !in.argsDone {
		in.args, in.argsErr = decodeExprArgs(in.Args)
		in.argsDone = true
	}
	return in.args, in.argsErr
}

// Errors of arguments an expression cannot read.
var (
	errExprArgsBytes  = fmt.Errorf("the arguments are larger than the %d bytes a rule expression may read", MaxExprArgsBytes)
	errExprArgsValues = fmt.Errorf("the arguments hold more than the %d JSON values a rule expression may read", MaxExprArgsValues)
)

// decodeExprArgs turns the model's arguments into a CEL map: absent or
// null arguments are an empty map; JSON that is not an object, or that is
// bigger than MaxExprArgsBytes or MaxExprArgsValues, is an error (the
// expression fails, which never allows). Integers that fit an int64 are
// ints, other numbers doubles.
func decodeExprArgs(raw json.RawMessage) (ref.Val, error) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) {
		return types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}), nil
	}
	if len(t) > MaxExprArgsBytes {
		return nil, errExprArgsBytes
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errors.New("the arguments are not valid JSON")
	}
	if dec.More() {
		return nil, errors.New("the arguments are not one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("the arguments are not a JSON object")
	}
	budget := MaxExprArgsValues
	if !exprNumbers(m, &budget) {
		return nil, errExprArgsValues
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, m), nil
}

// exprNumbers replaces json.Number values by int64 or float64, in place,
// counting every value it visits against budget; false when the budget
// ran out (the walk stops there).
func exprNumbers(v any, budget *int) bool {
	if *budget--; *budget < 0 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				x[k] = exprNumber(n)
			}
			if !exprNumbers(e, budget) {
				return false
			}
		}
	case []any:
		for i, e := range x {
			if n, ok := e.(json.Number); ok {
				x[i] = exprNumber(n)
			}
			if !exprNumbers(e, budget) {
				return false
			}
		}
	}
	return true
}

// exprNumber is n as an int64 when it is an integer that fits, else as a
// float64.
func exprNumber(x json.Number) any {
	if i, err := x.Int64(); err == nil {
		return i
	}
	f, _ := x.Float64() // out of range becomes ±Inf
	return f
}
