package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
)

// Explanation is the whole chain behind one decision, for
// `agenthost policy explain`: what the server declared, what inference
// gave, which catalogue entry matched, the effective metadata, what the
// arguments raised, which rules matched and what was decided.
type Explanation struct {
	Server       string `json:"server"`
	Tool         string `json:"tool"`
	Trusted      bool   `json:"trusted"`
	TrustLevel   int    `json:"trustLevel"`
	Unclassified string `json:"unclassified"`
	// Declared is the raw annotations object as the server sent it (a JSON
	// string when it was not valid JSON, null when absent).
	Declared      json.RawMessage `json:"declared"`
	DeclaredError string          `json:"declaredError,omitempty"`
	// ActionMetadata is the tool's action-metadata as the server sent it,
	// under "annotations" and "_meta" (where it was found); omitted when
	// the tool has none.
	ActionMetadata json.RawMessage `json:"actionMetadata,omitempty"`
	// Inferred is what the heuristic gives, shown even when inference is
	// off; InferenceUsed says whether it counted.
	Inferred      risk.Inference  `json:"inferred"`
	InferenceUsed bool            `json:"inferenceUsed"`
	Catalogue     *CatalogueMatch `json:"catalogue"`
	Effective     risk.Effective  `json:"effective"`
	Notes         []string        `json:"notes"`
	Arguments     json.RawMessage `json:"arguments"`
	Rules         []RuleMatch     `json:"rules"`
	// Expressions are the rules' when.expr, in config order, each with its
	// result for this call.
	Expressions []ExprResult `json:"expressions"`
	Decision    Decision     `json:"decision"`
	// NeverAllowed is set when no arguments could make the call run in a
	// session of this trust level.
	NeverAllowed bool `json:"neverAllowed"`
}

// RuleMatch is one rule that matched the call.
type RuleMatch struct {
	ID        string `json:"id"`
	Decide    Action `json:"decide"`
	Approvers int    `json:"approvers,omitempty"`
	Message   string `json:"message,omitempty"`
}

// ExprResult is one rule expression and what it gave for a call.
type ExprResult struct {
	Rule string `json:"rule"`
	Expr string `json:"expr"`
	// Result is "true", "false", "error" (the rule then matched with its
	// most restrictive reading) or "not evaluated" (the rule's other
	// conditions do not match the call).
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Expression results.
const (
	ExprTrue         = "true"
	ExprFalse        = "false"
	ExprError        = "error"
	ExprNotEvaluated = "not evaluated"
)

// Explain decides a call like Decide and records every step. The call's
// server and tool are taken from server and tool.
func (p *Policy) Explain(server string, trusted bool, tool risk.ToolInfo, c Call) Explanation {
	c.Server, c.Tool = server, tool.Name
	if c.Now.IsZero() {
		c.Now = time.Now() // the decision and the expressions see one time
	}
	eff, tr := p.effective(server, trusted, tool, true)
	d := p.Decide(eff, c)
	x := Explanation{
		Server:        server,
		Tool:          tool.Name,
		Trusted:       trusted,
		TrustLevel:    c.TrustLevel,
		Unclassified:  p.unclassified,
		Declared:      norm.JSONOrString(tool.Annotations),
		Inferred:      tr.inference,
		InferenceUsed: p.unclassified == UnclassifiedInfer && tr.inference.OK,
		Catalogue:     tr.catalogue,
		Effective:     eff,
		Notes:         append([]string{}, eff.Notes...),
		Arguments:     c.ArgsCheck.JSONOrString(c.Args),
		Rules:         []RuleMatch{},
		Expressions:   p.explainExprs(c, d.Risk),
		Decision:      d,
	}
	if tr.declaredErr != nil {
		x.DeclaredError = tr.declaredErr.Error()
	}
	if tr.action.Present {
		x.ActionMetadata = actionMetadataRaw(tool.Annotations, tool.Meta)
	}
	if t := p.clampTrust(c.TrustLevel); t < c.TrustLevel && t == p.trustCeiling {
		x.Notes = append(x.Notes, fmt.Sprintf("session trust level %d is capped at %d by the managed policy (maxTrustLevel)", c.TrustLevel, t))
	}
	for _, id := range d.Rules {
		for _, r := range p.rules {
			if r.rule.ID == id {
				x.Rules = append(x.Rules, RuleMatch{ID: id, Decide: r.action, Approvers: r.rule.Approvers, Message: r.rule.Message})
				break
			}
		}
	}
	x.NeverAllowed, _ = p.NeverAllowed(server, tool.Name, eff, c.TrustLevel)
	return x
}

// explainExprs evaluates every rule expression for the call, risk being
// its metadata after the call-time escalators.
func (p *Policy) explainExprs(c Call, risk risk.Effective) []ExprResult {
	out := []ExprResult{}
	if !p.hasExpr {
		return out
	}
	trust := p.clampTrust(c.TrustLevel)
	in := p.newExprInput(context.Background(), &c, &risk, trust)
	for i := range p.rules {
		r := &p.rules[i]
		if r.expr == nil {
			continue
		}
		x := ExprResult{Rule: r.rule.ID, Expr: r.expr.src, Result: ExprNotEvaluated}
		if r.matches(c.Server, c.Tool, risk, trust) {
			switch ok, err := r.expr.eval(in.ctx, in); {
			case err != nil:
				x.Result, x.Error = ExprError, norm.OneLine(err.Error(), 200)
			case ok:
				x.Result = ExprTrue
			default:
				x.Result = ExprFalse
			}
		}
		out = append(out, x)
	}
	return out
}

// ruleAction is the decide of a matched rule, "" when it did not match.
func (x Explanation) ruleAction(id string) Action {
	for _, r := range x.Rules {
		if r.ID == id {
			return r.Decide
		}
	}
	return ""
}

// WriteText renders the explanation for people.
func (x Explanation) WriteText(w io.Writer) error {
	var b strings.Builder
	trust := "not trusted"
	if x.Trusted {
		trust = "trusted"
	}
	fmt.Fprintf(&b, "%s / %s  (server annotations %s; session trust level %d; unclassified: %s)\n",
		norm.OneLine(x.Server, 80), norm.OneLine(x.Tool, 120), trust, x.TrustLevel, x.Unclassified)
	fmt.Fprintf(&b, "declared:   %s\n", norm.OneLine(string(x.Declared), 300))
	if x.DeclaredError != "" {
		fmt.Fprintf(&b, "            (%s)\n", x.DeclaredError)
	}
	if len(x.ActionMetadata) > 0 {
		fmt.Fprintf(&b, "action-metadata: %s\n", norm.OneLine(string(x.ActionMetadata), 300))
	}
	if x.Inferred.OK {
		used := "used"
		if !x.InferenceUsed {
			used = "not used: unclassified is " + x.Unclassified
		}
		fmt.Fprintf(&b, "inferred:   %s/%s, blastRadius %s (%s; %s)\n", x.Inferred.Category, x.Inferred.RiskLevel, x.Inferred.BlastRadius, x.Inferred.Version, used)
		for _, ev := range x.Inferred.Evidence {
			fmt.Fprintf(&b, "            - %s\n", ev)
		}
	} else {
		fmt.Fprintf(&b, "inferred:   nothing (%s)\n", x.Inferred.Reason)
	}
	if x.Catalogue != nil {
		fmt.Fprintf(&b, "catalogue:  entry %d (server %q, tool %q)\n", x.Catalogue.Index, x.Catalogue.Entry.Server, x.Catalogue.Entry.Tool)
	} else {
		b.WriteString("catalogue:  no entry matched\n")
	}
	b.WriteString("effective:\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	e, s := x.Effective, x.Effective.Source
	rows := [][3]string{
		{"category", string(e.Category), string(s.Category)},
		{"riskLevel", string(e.RiskLevel), string(s.RiskLevel)},
		{"blastRadius", string(e.BlastRadius), string(s.BlastRadius)},
		{"reversibility", string(e.Reversibility), string(s.Reversibility)},
		{"sideEffects", "[" + strings.Join(e.SideEffects, ", ") + "]", string(s.SideEffects)},
		{"approvalRecommendation", string(e.ApprovalRecommendation), string(s.ApprovalRecommendation)},
		{"minTrustLevel", fmt.Sprint(e.MinTrustLevel), string(s.MinTrustLevel)},
	}
	if len(e.ResultLabels) > 0 {
		rows = append(rows, [3]string{"resultLabels", "[" + strings.Join(e.ResultLabels, ", ") + "]", string(risk.SourceActionMetadata)})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", r[0], r[1], r[2])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range x.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	if len(x.Decision.Escalations) > 0 {
		b.WriteString("at call:\n")
		for _, n := range x.Decision.Escalations {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	if len(x.Rules) == 0 {
		b.WriteString("rules:      none matched\n")
	} else {
		parts := make([]string, len(x.Rules))
		for i, r := range x.Rules {
			parts[i] = fmt.Sprintf("%s (%s)", r.ID, r.Decide)
		}
		fmt.Fprintf(&b, "rules:      %s\n", strings.Join(parts, ", "))
	}
	if len(x.Expressions) > 0 {
		b.WriteString("expressions:\n")
		for _, e := range x.Expressions {
			fmt.Fprintf(&b, "  %s: %s\n      => %s", e.Rule, norm.OneLine(e.Expr, 300), e.Result)
			if e.Error != "" {
				fmt.Fprintf(&b, ": %s", e.Error)
				if r := x.ruleAction(e.Rule); r == ActionAllow {
					b.WriteString(" (an allow rule whose expression fails counts as ask)")
				}
			}
			b.WriteString("\n")
		}
	}
	d := x.Decision
	fmt.Fprintf(&b, "decision:   %s", d.Action)
	switch d.Action {
	case ActionAsk:
		fmt.Fprintf(&b, " (%d approver(s), timeout %s)", d.Approvers, d.Timeout)
	default:
		fmt.Fprintf(&b, " (%s)", d.Outcome)
	}
	fmt.Fprintf(&b, ": %s\n", d.Reason)
	if d.Message != "" {
		fmt.Fprintf(&b, "message:    %s\n", norm.OneLine(d.Message, 300))
	}
	if x.NeverAllowed {
		b.WriteString("            no arguments can make this call run at this trust level\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// actionMetadataRaw is the action-metadata objects of a tool, keyed by
// where they were found.
func actionMetadataRaw(annotations, meta json.RawMessage) json.RawMessage {
	out := map[string]json.RawMessage{}
	for where, raw := range map[string]json.RawMessage{"annotations": annotations, "_meta": meta} {
		if v, ok := risk.ObjectFields(raw)[risk.ActionMetadataKey]; ok {
			out[where] = norm.JSONOrString(v)
		}
	}
	b, _ := json.Marshal(out) // every part is valid JSON by construction
	return b
}
