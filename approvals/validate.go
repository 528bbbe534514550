package approvals

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agenthost/agenthost/internal/glob"
)

// FieldError is one problem in the approvals configuration. Key names the
// setting relative to the approvals section, e.g. "rules[2].decide", so a
// loader can prefix it with the file name and "approvals.".
type FieldError struct {
	Key string
	Msg string
}

// Error returns "key: message".
func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// maxConfigApprovers caps Config.MaxApprovers itself.
const maxConfigApprovers = 100

// Validate reports every problem in the configuration. The result is nil, a
// single *FieldError, or an errors.Join of *FieldError values (one per
// problem, in config order); use errors.As or the Unwrap() []error method to
// reach each key.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	switch c.Unclassified {
	case "", UnclassifiedAsk, UnclassifiedStrict, UnclassifiedInfer:
	default:
		add("unclassified", "unknown value %q (want ask, strict or infer)", c.Unclassified)
	}
	switch Action(c.NoMatch) {
	case "", ActionAllow, ActionAsk, ActionDeny:
	default:
		add("noMatch", "unknown value %q (want %s)", c.NoMatch, wantList(actionOrder))
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
			add(key+".decide", "required (want %s)", wantList(actionOrder))
		case !known(actionOrder, decide):
			add(key+".decide", "unknown value %q (want %s)", r.Decide, wantList(actionOrder))
		}
		switch {
		case r.Approvers < 0:
			add(key+".approvers", "must not be negative, got %d", r.Approvers)
		case r.Approvers > maxApprovers:
			add(key+".approvers", "needs %d distinct approvers but at most %d can exist (maxApprovers)", r.Approvers, maxApprovers)
		case r.Approvers > 0 && decide != ActionAsk && known(actionOrder, decide):
			add(key+".approvers", "only valid with decide: ask")
		}
		switch {
		case r.Timeout < 0:
			add(key+".timeout", "must not be negative, got %s", r.Timeout)
		case r.Timeout > 0 && decide != ActionAsk && known(actionOrder, decide):
			add(key+".timeout", "only valid with decide: ask")
		}
		errs = append(errs, validateMatch(key+".when", r.When)...)
		if r.When.Expr != "" {
			if _, err := compileExpr(r.When.Expr); err != nil {
				add(key+".when.expr", "rule %q: %v", r.ID, err)
			}
		}
	}

	cats := make([]string, 0, len(c.ExtraVerbs))
	for cat := range c.ExtraVerbs {
		cats = append(cats, cat)
	}
	sortStrings(cats)
	for _, cat := range cats {
		verbs := c.ExtraVerbs[cat]
		if !known(categoryOrder, Category(cat)) {
			add("extraVerbs."+cat, "unknown category %q (want %s)", cat, wantList(categoryOrder))
			continue
		}
		for i, v := range verbs {
			if err := checkVerb(v); err != nil {
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
	if known(order, T(v)) {
		return nil
	}
	return &FieldError{Key: key, Msg: fmt.Sprintf("unknown value %q (want %s)", v, wantList(order))}
}

func validateMetadata(key string, m RawMetadata) []error {
	var errs []error
	check := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	empty := true
	if m.Category != nil {
		empty = false
		check(validateEnum(key+".category", categoryOrder, *m.Category))
	}
	if m.RiskLevel != nil {
		empty = false
		check(validateEnum(key+".riskLevel", riskOrder, *m.RiskLevel))
	}
	if m.BlastRadius != nil {
		empty = false
		check(validateEnum(key+".blastRadius", blastOrder, *m.BlastRadius))
	}
	if m.Reversibility != nil {
		empty = false
		check(validateEnum(key+".reversibility", reversibilityOrder, *m.Reversibility))
	}
	if m.ApprovalRecommendation != nil {
		empty = false
		check(validateEnum(key+".approvalRecommendation", approvalOrder, *m.ApprovalRecommendation))
	}
	if m.MinTrustLevel != nil {
		empty = false
		if _, ok := normalizeTrust(m.MinTrustLevel); !ok {
			got, _ := json.Marshal(m.MinTrustLevel)
			errs = append(errs, &FieldError{Key: key + ".minTrustLevel",
				Msg: fmt.Sprintf("must be an integer from %d to %d, got %s", MinTrust, MaxTrust, got)})
		}
	}
	for i, s := range m.SideEffects {
		empty = false
		if len(normalizeSideEffects([]string{s})) == 0 {
			errs = append(errs, &FieldError{Key: fmt.Sprintf("%s.sideEffects[%d]", key, i), Msg: "empty side effect"})
		}
	}
	if empty {
		errs = append(errs, &FieldError{Key: key, Msg: "classifies nothing (set at least one field)"})
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
	enums("category", m.Category, func(k, v string) error { return validateEnum(k, categoryOrder, v) })
	enums("riskLevel", m.RiskLevel, func(k, v string) error { return validateEnum(k, riskOrder, v) })
	enums("blastRadius", m.BlastRadius, func(k, v string) error { return validateEnum(k, blastOrder, v) })
	enums("reversibility", m.Reversibility, func(k, v string) error { return validateEnum(k, reversibilityOrder, v) })
	enums("approvalRecommendation", m.ApprovalRecommendation, func(k, v string) error { return validateEnum(k, approvalOrder, v) })
	enums("sideEffects", m.SideEffects, func(k, v string) error {
		if len(normalizeSideEffects([]string{v})) == 0 {
			return &FieldError{Key: k, Msg: "empty side effect"}
		}
		return nil
	})
	globs := func(k, v string) error {
		if err := glob.Validate(v); err != nil {
			return &FieldError{Key: k, Msg: fmt.Sprintf("invalid glob %q: %v", v, err)}
		}
		return nil
	}
	enums("server", m.Server, globs)
	enums("tool", m.Tool, globs)
	for i, t := range m.TrustLevel {
		if !ValidTrustLevel(t) {
			errs = append(errs, &FieldError{Key: fmt.Sprintf("%s.trustLevel[%d]", key, i),
				Msg: fmt.Sprintf("must be from %d to %d, got %d", MinTrust, MaxTrust, t)})
		}
	}
	if m.MinTrustLevelAbove < 0 || m.MinTrustLevelAbove > MaxTrust-MinTrust {
		errs = append(errs, &FieldError{Key: key + ".minTrustLevelAbove",
			Msg: fmt.Sprintf("must be from 0 to %d, got %d", MaxTrust-MinTrust, m.MinTrustLevelAbove)})
	}
	return errs
}
