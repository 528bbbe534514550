package rules

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/internal/glob"
)

// maxConfigApprovers caps Config.MaxApprovers itself.
const maxConfigApprovers = 100

// Validate reports every problem in the configuration. The result is nil, a
// single *FieldError, or an errors.Join of *FieldError values (one per
// problem, in config order); use errors.As or the Unwrap() []error method to
// reach each key.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &risk.FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	switch c.Unclassified {
	case "", UnclassifiedAsk, UnclassifiedStrict, UnclassifiedInfer:
	default:
		add("unclassified", "unknown value %q (want ask, strict or infer)", c.Unclassified)
	}
	switch Action(c.NoMatch) {
	case "", ActionAllow, ActionAsk, ActionDeny:
	default:
		add("noMatch", "unknown value %q (want %s)", c.NoMatch, norm.WantList(actionOrder))
	}
	if c.Timeout < 0 {
		add("timeout", "must not be negative, got %s", c.Timeout)
	}
	if c.MaxApprovers < 0 || c.MaxApprovers > maxConfigApprovers {
		add("maxApprovers", "must be between 1 and %d, got %d", maxConfigApprovers, c.MaxApprovers)
	}
	maxApprovers := c.maxApprovers()

	for i, e := range c.Catalogue {
		key := fmt.Sprintf("catalogue[%d]", i)
		for _, g := range []struct{ name, val string }{{"server", e.Server}, {"tool", e.Tool}} {
			if g.val == "" {
				add(key+"."+g.name, `required (use "*" for any)`)
			} else if err := glob.Validate(g.val); err != nil {
				add(key+"."+g.name, "invalid glob %q: %v", g.val, err)
			}
		}
		errs = append(errs, validateMetadata(key+".metadata", e.Metadata)...)
	}

	seen := map[string]int{}
	for i, r := range c.Rules {
		key := fmt.Sprintf("rules[%d]", i)
		switch first, dup := seen[r.ID]; {
		case r.ID == "":
			add(key+".id", "required")
		case dup:
			add(key+".id", "duplicate id %q (also rules[%d])", r.ID, first)
		case isManagedID(r.ID):
			add(key+".id", "%q starts with %q, which is kept for the rules of a managed policy", r.ID, ManagedRulePrefix)
		default:
			seen[r.ID] = i
		}
		decide := Action(r.Decide)
		switch {
		case r.Decide == "":
			add(key+".decide", "required (want %s)", norm.WantList(actionOrder))
		case !norm.Known(actionOrder, decide):
			add(key+".decide", "unknown value %q (want %s)", r.Decide, norm.WantList(actionOrder))
		}
		switch {
		case r.Approvers < 0:
			add(key+".approvers", "must not be negative, got %d", r.Approvers)
		case r.Approvers > maxApprovers:
			add(key+".approvers", "needs %d distinct approvers but at most %d can exist (maxApprovers)", r.Approvers, maxApprovers)
		case r.Approvers > 0 && decide != ActionAsk && norm.Known(actionOrder, decide):
			add(key+".approvers", "only valid with decide: ask")
		}
		switch {
		case r.Timeout < 0:
			add(key+".timeout", "must not be negative, got %s", r.Timeout)
		case r.Timeout > 0 && decide != ActionAsk && norm.Known(actionOrder, decide):
			add(key+".timeout", "only valid with decide: ask")
		}
		errs = append(errs, validateMatch(key+".when", r.When)...)
		// Without an engine an expression is left unchecked: a program
		// with none cannot run it, and NewPolicy says so
		// (ErrNoExprEngine); the lean agenthost build hands such a
		// configuration to the full build before it gets there.
		if r.When.Expr != "" && exprEngine() != nil {
			if _, err := compileExpr(r.When.Expr); err != nil {
				add(key+".when.expr", "rule %q: %v", r.ID, err)
			}
		}
	}

	cats := make([]string, 0, len(c.ExtraVerbs))
	for cat := range c.ExtraVerbs {
		cats = append(cats, cat)
	}
	norm.SortStrings(cats)
	for _, cat := range cats {
		verbs := c.ExtraVerbs[cat]
		if !norm.Known(risk.CategoryOrder, risk.Category(cat)) {
			add("extraVerbs."+cat, "unknown category %q (want %s)", cat, norm.WantList(risk.CategoryOrder))
			continue
		}
		for i, v := range verbs {
			if err := risk.CheckVerb(v); err != nil {
				add(fmt.Sprintf("extraVerbs.%s[%d]", cat, i), "%v", err)
			}
		}
	}

	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}

func (c *Config) maxApprovers() int {
	if c.MaxApprovers > 0 {
		return c.MaxApprovers
	}
	return DefaultMaxApprovers
}

func validateEnum[T ~string](key string, order []T, v string) error {
	if norm.Known(order, T(v)) {
		return nil
	}
	return &risk.FieldError{Key: key, Msg: fmt.Sprintf("unknown value %q (want %s)", v, norm.WantList(order))}
}

func validateMetadata(key string, m risk.RawMetadata) []error {
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	empty := true
	if m.Category != nil {
		empty = false
		check(validateEnum(key+".category", risk.CategoryOrder, *m.Category))
	}
	if m.RiskLevel != nil {
		empty = false
		check(validateEnum(key+".riskLevel", risk.RiskOrder, *m.RiskLevel))
	}
	if m.BlastRadius != nil {
		empty = false
		check(validateEnum(key+".blastRadius", risk.BlastOrder, *m.BlastRadius))
	}
	if m.Reversibility != nil {
		empty = false
		check(validateEnum(key+".reversibility", risk.ReversibilityOrder, *m.Reversibility))
	}
	if m.ApprovalRecommendation != nil {
		empty = false
		check(validateEnum(key+".approvalRecommendation", risk.ApprovalOrder, *m.ApprovalRecommendation))
	}
	if m.MinTrustLevel != nil {
		empty = false
		if _, ok := risk.NormalizeTrust(m.MinTrustLevel); !ok {
			got, _ := json.Marshal(m.MinTrustLevel)
			errs = append(errs, &risk.FieldError{Key: key + ".minTrustLevel",
				Msg: fmt.Sprintf("must be an integer from %d to %d, got %s", risk.MinTrust, risk.MaxTrust, got)})
		}
	}
	for i, s := range m.SideEffects {
		empty = false
		if len(risk.NormalizeSideEffects([]string{s})) == 0 {
			errs = append(errs, &risk.FieldError{Key: fmt.Sprintf("%s.sideEffects[%d]", key, i), Msg: "empty side effect"})
		}
	}
	if empty {
		errs = append(errs, &risk.FieldError{Key: key, Msg: "classifies nothing (set at least one field)"})
	}
	return errs
}

func validateMatch(key string, m Match) []error {
	var errs []error
	enums := func(field string, vals []string, check func(string, string) error) {
		for i, v := range vals {
			if err := check(fmt.Sprintf("%s.%s[%d]", key, field, i), v); err != nil {
				errs = append(errs, err)
			}
		}
	}
	enums("category", m.Category, func(k, v string) error { return validateEnum(k, risk.CategoryOrder, v) })
	enums("riskLevel", m.RiskLevel, func(k, v string) error { return validateEnum(k, risk.RiskOrder, v) })
	enums("blastRadius", m.BlastRadius, func(k, v string) error { return validateEnum(k, risk.BlastOrder, v) })
	enums("reversibility", m.Reversibility, func(k, v string) error { return validateEnum(k, risk.ReversibilityOrder, v) })
	enums("approvalRecommendation", m.ApprovalRecommendation, func(k, v string) error { return validateEnum(k, risk.ApprovalOrder, v) })
	enums("sideEffects", m.SideEffects, func(k, v string) error {
		if len(risk.NormalizeSideEffects([]string{v})) == 0 {
			return &risk.FieldError{Key: k, Msg: "empty side effect"}
		}
		return nil
	})
	globs := func(k, v string) error {
		if err := glob.Validate(v); err != nil {
			return &risk.FieldError{Key: k, Msg: fmt.Sprintf("invalid glob %q: %v", v, err)}
		}
		return nil
	}
	enums("server", m.Server, globs)
	enums("tool", m.Tool, globs)
	for i, t := range m.TrustLevel {
		if !risk.ValidTrustLevel(t) {
			errs = append(errs, &risk.FieldError{Key: fmt.Sprintf("%s.trustLevel[%d]", key, i),
				Msg: fmt.Sprintf("must be from %d to %d, got %d", risk.MinTrust, risk.MaxTrust, t)})
		}
	}
	if m.MinTrustLevelAbove < 0 || m.MinTrustLevelAbove > risk.MaxTrust-risk.MinTrust {
		errs = append(errs, &risk.FieldError{Key: key + ".minTrustLevelAbove",
			Msg: fmt.Sprintf("must be from 0 to %d, got %d", risk.MaxTrust-risk.MinTrust, m.MinTrustLevelAbove)})
	}
	return errs
}
