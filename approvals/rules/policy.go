package rules

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/internal/glob"
)

// Policy turns tool definitions into effective risk metadata and calls into
// decisions. It is immutable after NewPolicy and safe for concurrent use;
// reload configuration by building a new Policy.
type Policy struct {
	unclassified string
	catalogue    []catalogueRule
	rules        []compiledRule
	noMatch      Action
	timeout      time.Duration
	maxApprovers int
	inferrer     *risk.Inferrer
	// hasExpr: some rule has a when.expr, so calls need an exprInput.
	hasExpr bool
	// trustCeiling caps sessions' trust levels (a managed policy's
	// maxTrustLevel); 0 means no cap.
	trustCeiling int
	// revision identifies the effective configuration (see Revision).
	revision string

	// evaluations memoises evaluate by the set of matching rules: the
	// decision's texts are built once, not on every call.
	evaluations *memo[evalKey, evaluation]

	// effectives memoises Effective when nothing is inferred.
	effectives *memo[effectiveKey, risk.Effective]
}

// evalKey is what an evaluation depends on besides the rules themselves.
type evalKey struct {
	matched      uint64 // bit i: rule i matched
	failed       uint64 // bit i: rule i's expression failed (matched too)
	minApprovers int
}

// maxMemoisedEvaluations bounds the memo; combinations of matching rules
// beyond it are evaluated each time.
const maxMemoisedEvaluations = 4096

type catalogueRule struct {
	index        int
	entry        CatalogueEntry
	server, tool glob.Pattern
}

type compiledRule struct {
	index         int
	rule          Rule
	action        Action
	categories    []risk.Category
	risks         []risk.RiskLevel
	blasts        []risk.BlastRadius
	reversibility []risk.Reversibility
	approval      []risk.ApprovalRecommendation
	sideEffects   []string
	servers       []glob.Pattern
	tools         []glob.Pattern
	trust         []int
	expr          *compiledExpr // nil without when.expr
}

// NewPolicy validates cfg (see Config.Validate) and compiles it.
func NewPolicy(cfg Config) (*Policy, error) { return NewManagedPolicy(cfg, nil) }

// NewManagedPolicy validates the user's cfg and the administrator's
// managed approvals (nil: none; see Managed) and compiles them together:
// the managed rules are always evaluated (their ids prefixed with
// ManagedRulePrefix), the managed catalogue comes first, the managed
// unclassified mode and noMatch are floors, and the managed
// maxTrustLevel caps every session's trust level.
func NewManagedPolicy(cfg Config, managed *Managed) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid approvals config: %w", err)
	}
	if managed != nil {
		if err := managed.Validate(); err != nil {
			return nil, fmt.Errorf("invalid managed approvals: %w", err)
		}
	}
	cfg, ceiling := merged(cfg, managed)
	revision, err := policyRevision(cfg, ceiling)
	if err != nil {
		return nil, fmt.Errorf("invalid approvals config: %w", err)
	}
	inferrer, err := risk.NewInferrer(cfg.ExtraVerbs)
	if err != nil {
		return nil, fmt.Errorf("invalid approvals config: %w", err)
	}
	p := &Policy{
		evaluations:  newMemo[evalKey, evaluation](maxMemoisedEvaluations),
		effectives:   newMemo[effectiveKey, risk.Effective](maxMemoisedEffectives),
		unclassified: cfg.Unclassified,
		noMatch:      Action(cfg.NoMatch),
		timeout:      cfg.Timeout,
		maxApprovers: cfg.maxApprovers(),
		inferrer:     inferrer,
		trustCeiling: ceiling,
		revision:     revision,
	}
	if p.unclassified == "" {
		p.unclassified = UnclassifiedAsk
	}
	if p.noMatch == "" {
		p.noMatch = ActionAsk
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	// Validate has checked every glob, so compile errors cannot happen here.
	for i, e := range cfg.Catalogue {
		server, _ := glob.Compile(e.Server)
		tool, _ := glob.Compile(e.Tool)
		p.catalogue = append(p.catalogue, catalogueRule{index: i, entry: e, server: server, tool: tool})
	}
	for i, r := range cfg.Rules {
		cr := compiledRule{
			index:         i,
			rule:          r,
			action:        Action(r.Decide),
			categories:    enumList[risk.Category](r.When.Category),
			risks:         enumList[risk.RiskLevel](r.When.RiskLevel),
			blasts:        enumList[risk.BlastRadius](r.When.BlastRadius),
			reversibility: enumList[risk.Reversibility](r.When.Reversibility),
			approval:      enumList[risk.ApprovalRecommendation](r.When.ApprovalRecommendation),
			sideEffects:   risk.NormalizeSideEffects(r.When.SideEffects),
			trust:         slices.Clone(r.When.TrustLevel),
		}
		for _, s := range r.When.Server {
			g, _ := glob.Compile(s)
			cr.servers = append(cr.servers, g)
		}
		for _, s := range r.When.Tool {
			g, _ := glob.Compile(s)
			cr.tools = append(cr.tools, g)
		}
		if r.When.Expr != "" {
			x, err := compileExpr(r.When.Expr)
			if err != nil { // Validate compiled it already, unless no engine is registered
				return nil, fmt.Errorf("invalid approvals config: rules[%d].when.expr: rule %q: %w", i, r.ID, err)
			}
			cr.expr, p.hasExpr = x, true
		}
		p.rules = append(p.rules, cr)
	}
	return p, nil
}

func enumList[T ~string](in []string) []T {
	out := make([]T, len(in))
	for i, s := range in {
		out[i] = T(s)
	}
	return out
}

// UsesExpressions reports whether some rule has a when.expr: only then do
// calls need Call.SessionID, Subject, SessionValues and Now.
func (p *Policy) UsesExpressions() bool { return p.hasExpr }

// Inferrer returns the policy's inference heuristic (with its extra verbs).
func (p *Policy) Inferrer() *risk.Inferrer { return p.inferrer }

// CatalogueMatch is the operator catalogue entry that classified a tool.
type CatalogueMatch struct {
	Index int            `json:"index"`
	Entry CatalogueEntry `json:"entry"`
}

// trace is everything Effective looked at, for Explain.
type trace struct {
	declared    risk.Annotations
	declaredErr error
	inference   risk.Inference
	catalogue   *CatalogueMatch
	action      risk.ActionMetadata
}

// Effective computes a tool's effective metadata, field by field:
//
//  1. the first operator catalogue entry (in config order) whose server and
//     tool globs match — first match wins, so put specific entries first;
//     fields the entry leaves out fall through to the next steps;
//  2. for a trusted server, the declared value as-is (after normalisation);
//  3. inference when approvals.unclassified is "infer" and the tool could
//     be inferred, else the fail-closed default;
//  4. for an untrusted server, a declared value replaces the step-3 value
//     only when it is more restrictive. Under "strict" the step-3 value is
//     already the most restrictive one, so an untrusted server's
//     declarations change nothing there except adding side effects.
//  5. the tool's action-metadata (vocab.go) where it implies a value: for
//     a trusted server in place of an absent step-2 declaration, for any
//     other only when it is more restrictive than the step-4 value
//     (source "action-metadata").
//
// The old hints count as declarations of the fields they imply when the
// SEP-2793 field is absent: destructiveHint true means riskLevel high and
// category mutate (destructive in MCP includes overwriting, so it does not
// imply delete); readOnlyHint true (without destructiveHint) means category
// read, riskLevel low, reversibility auto, which by step 4 can never lower
// anything for an untrusted server. idempotentHint and openWorldHint do
// not change the metadata.
//
// Then the consistency floors apply (destroy is at least high risk, delete
// at least medium, data_exfiltration or privilege_change side effects at
// least high), and reversibility, approvalRecommendation and minTrustLevel
// are inferred from the effective category and risk level when inference is
// on and nobody else set them.
//
// Without inference the result depends only on the matching catalogue
// entry, the declared annotations and trust, so it is memoised by those:
// a server's many tools that share an annotation shape share the work.
// The returned Effective's lists are shared: read them, do not modify them.
func (p *Policy) Effective(server string, trusted bool, tool risk.ToolInfo) risk.Effective {
	if p.unclassified == UnclassifiedInfer {
		e, _ := p.effective(server, trusted, tool, false)
		return e
	}
	idx := p.catalogueIndex(server, tool.Name)
	if idx >= 0 && p.catalogue[idx].derives() {
		// Derived fields depend on the tool's own name and schema.
		e, _ := p.effective(server, trusted, tool, false)
		return e
	}
	key := effectiveKey{catalogue: idx, annotations: string(bytes.TrimSpace(tool.Annotations)), meta: string(bytes.TrimSpace(tool.Meta)), trusted: trusted}
	return p.effectives.get(key, func() risk.Effective {
		e, _ := p.effective(server, trusted, tool, false)
		return e
	})
}

// effectiveKey is what Effective depends on when nothing is inferred.
type effectiveKey struct {
	catalogue   int // index of the matching entry, -1 for none
	annotations string
	meta        string
	trusted     bool
}

// maxMemoisedEffectives bounds the memo (distinct annotation shapes).
const maxMemoisedEffectives = 1 << 14

// derives reports a catalogue entry that sets category and riskLevel but
// leaves out fields that inference derives from them (blastRadius,
// reversibility, approvalRecommendation, minTrustLevel): those are derived
// the way inference would, rather than left at the fail-closed default.
func (c catalogueRule) derives() bool {
	m := c.entry.Metadata
	return m.Category != nil && m.RiskLevel != nil &&
		(m.BlastRadius == nil || m.Reversibility == nil || m.ApprovalRecommendation == nil || m.MinTrustLevel == nil)
}

// catalogueIndex is the index of the first catalogue entry matching the
// tool, or -1.
func (p *Policy) catalogueIndex(server, tool string) int {
	for i, c := range p.catalogue {
		if c.server.Match(server) && c.tool.Match(tool) {
			return i
		}
	}
	return -1
}

// effective merges the sources of a tool's risk metadata. Inference runs
// only when it can count (unclassified: infer) or is to be explained.
func (p *Policy) effective(server string, trusted bool, tool risk.ToolInfo, explain bool) (risk.Effective, trace) {
	var tr trace
	tr.declared, tr.declaredErr = risk.ParseAnnotations(tool.Annotations)
	if explain || p.unclassified == UnclassifiedInfer {
		tr.inference = p.inferrer.Infer(tool)
	}
	var cat risk.RawMetadata
	derive := false
	if i := p.catalogueIndex(server, tool.Name); i >= 0 {
		c := p.catalogue[i]
		tr.catalogue = &CatalogueMatch{Index: c.index, Entry: c.entry}
		cat = c.entry.Metadata
		derive = c.derives()
	}
	m := Merger{trusted: trusted}
	if tr.declaredErr != nil {
		m.note("declared annotations ignored: %v", tr.declaredErr)
	}
	if tr.catalogue != nil {
		m.note("catalogue[%d] (server %q, tool %q) matched", tr.catalogue.Index, tr.catalogue.Entry.Server, tr.catalogue.Entry.Tool)
	}
	decl := m.DeclaredView(tr.declared)
	tr.action = risk.ParseActionMetadata(tool.Annotations, tool.Meta)
	act := tr.action.Implied()
	m.notes = append(m.notes, act.Notes...)
	inf := tr.inference
	useInference := p.unclassified == UnclassifiedInfer && inf.OK
	switch {
	case derive:
		// The operator classified the tool: what the entry leaves out is
		// derived from its category and riskLevel as inference would,
		// with the blast radius the tool's scope parameters imply.
		scope := inf
		if !explain && p.unclassified != UnclassifiedInfer {
			scope = p.inferrer.Infer(tool)
		}
		inf = risk.Inference{OK: true, Category: norm.NormEnum(risk.CategoryOrder, risk.Category(*cat.Category)), RiskLevel: norm.NormEnum(risk.RiskOrder, risk.RiskLevel(*cat.RiskLevel)),
			BlastRadius: risk.OrDefault(scope.BlastRadius, risk.BlastItem), Version: scope.Version}
		useInference = true
		m.note("fields catalogue[%d] leaves out are derived from its category and riskLevel", tr.catalogue.Index)
	case p.unclassified == UnclassifiedInfer && !inf.OK:
		m.note("not inferred: %s", inf.Reason)
	case !useInference:
		inf = risk.Inference{}
	}

	var e risk.Effective
	e.Category, e.Source.Category = mergeEnum(&m, "category", risk.CategoryOrder, cat.Category, decl.Category, nil, inf.Category, risk.CategoryDestroy)
	e.RiskLevel, e.Source.RiskLevel = mergeEnum(&m, "riskLevel", risk.RiskOrder, cat.RiskLevel, decl.RiskLevel, act.Meta.RiskLevel, inf.RiskLevel, risk.RiskCritical)
	e.BlastRadius, e.Source.BlastRadius = mergeEnum(&m, "blastRadius", risk.BlastOrder, cat.BlastRadius, decl.BlastRadius, nil, inf.BlastRadius, risk.BlastGlobal)
	e.SideEffects, e.Source.SideEffects = m.sideEffects(cat.SideEffects, decl.SideEffects, act.Meta.SideEffects, inf.SideEffects, useInference)
	m.notes = append(m.notes, risk.ApplyFloors(&e)...)

	var infRev risk.Reversibility
	var infApproval risk.ApprovalRecommendation
	var infTrust int
	if useInference {
		infRev = norm.MaxEnum(risk.ReversibilityOrder, risk.ReversibilityFor(e.Category), risk.OrDefault(inf.Reversibility, risk.ReversibleAuto))
		infApproval = risk.ApprovalFor(e.RiskLevel)
		infTrust = risk.TrustFor(e.RiskLevel)
		e.InferenceVersion = inf.Version
	}
	e.Reversibility, e.Source.Reversibility = mergeEnum(&m, "reversibility", risk.ReversibilityOrder, cat.Reversibility, decl.Reversibility, act.Meta.Reversibility, infRev, risk.ReversibleNone)
	e.ApprovalRecommendation, e.Source.ApprovalRecommendation = mergeEnum(&m, "approvalRecommendation", risk.ApprovalOrder, cat.ApprovalRecommendation, decl.ApprovalRecommendation, act.Meta.ApprovalRecommendation, infApproval, risk.ApprovalMulti)
	e.MinTrustLevel, e.Source.MinTrustLevel = m.trust(cat.MinTrustLevel, decl.MinTrustLevel, infTrust)
	if !usesSource(e.Source, risk.SourceInferred) {
		e.InferenceVersion = ""
	}
	if p.unclassified != UnclassifiedStrict && classifiedBy(e.Source, risk.SourceDefault) {
		e.Unclassified = true
		e.Hints = append(declaredHints(tr.declared), tr.action.Hints()...)
		m.note("unclassified (approvals.unclassified: %s): offered, and every call asks one person", p.unclassified)
	}
	e.ResultLabels = act.Labels
	e.Notes = m.notes
	return e, tr
}

// declaredHints lists what a server declared about a tool, for approvers of
// an unclassified tool (untrusted evidence).
func declaredHints(a risk.Annotations) []string {
	var hints []string
	str := func(name string, v *string) {
		if v != nil {
			hints = append(hints, name+"="+norm.OneLine(*v, 40))
		}
	}
	boolean := func(name string, v *bool) {
		if v != nil {
			hints = append(hints, fmt.Sprintf("%s=%t", name, *v))
		}
	}
	boolean("readOnlyHint", a.ReadOnlyHint)
	boolean("destructiveHint", a.DestructiveHint)
	boolean("idempotentHint", a.IdempotentHint)
	boolean("openWorldHint", a.OpenWorldHint)
	str("category", a.Risk.Category)
	str("riskLevel", a.Risk.RiskLevel)
	str("blastRadius", a.Risk.BlastRadius)
	str("reversibility", a.Risk.Reversibility)
	return hints
}

func usesSource(s risk.Sources, src risk.Source) bool {
	for _, v := range []risk.Source{s.Category, s.RiskLevel, s.BlastRadius, s.Reversibility, s.SideEffects, s.ApprovalRecommendation, s.MinTrustLevel} {
		if v == src {
			return true
		}
	}
	return false
}

// classifiedBy reports whether any field that classifies a tool (every
// field but sideEffects, where "none known" is an answer) came from src.
func classifiedBy(s risk.Sources, src risk.Source) bool {
	for _, v := range []risk.Source{s.Category, s.RiskLevel, s.BlastRadius, s.Reversibility, s.ApprovalRecommendation, s.MinTrustLevel} {
		if v == src {
			return true
		}
	}
	return false
}

type Merger struct {
	trusted bool
	notes   []string
}

func (m *Merger) note(format string, args ...any) {
	m.notes = append(m.notes, fmt.Sprintf(format, args...))
}

// DeclaredView is the server's declaration with the old hints standing in
// for absent SEP-2793 fields.
func (m *Merger) DeclaredView(a risk.Annotations) risk.RawMetadata {
	d := a.Risk
	set := func(field **string, name, v, hint string) {
		if *field == nil {
			*field = &v
			m.note("%s: declared %s taken as %s", hint, name, v)
		}
	}
	switch {
	case a.DestructiveHint != nil && *a.DestructiveHint:
		set(&d.RiskLevel, "riskLevel", string(risk.RiskHigh), "destructiveHint")
		set(&d.Category, "category", string(risk.CategoryMutate), "destructiveHint")
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		set(&d.Category, "category", string(risk.CategoryRead), "readOnlyHint")
		set(&d.RiskLevel, "riskLevel", string(risk.RiskLow), "readOnlyHint")
		set(&d.Reversibility, "reversibility", string(risk.ReversibleAuto), "readOnlyHint")
	}
	return d
}

// mergeEnum picks one field's value. act is what the tool's
// action-metadata implies for it (nil: nothing): for a trusted server it
// stands in for an absent SEP-2793 declaration, for any other it can only
// raise, like the declaration.
func mergeEnum[T ~string](m *Merger, name string, order []T, cat, decl, act *string, inferred T, fallback T) (T, risk.Source) {
	if cat != nil {
		return norm.NormEnum(order, T(*cat)), risk.SourceCatalogue
	}
	var declared T
	if decl != nil {
		declared = norm.NormEnum(order, T(*decl))
		if !norm.Known(order, T(*decl)) {
			m.note("declared %s %q is not a known value: read as %s", name, norm.OneLine(*decl, 40), declared)
		}
	}
	if decl != nil && m.trusted {
		return declared, risk.SourceDeclared
	}
	if act != nil && m.trusted {
		m.note("action-metadata: %s taken as %s (server trusted, no SEP-2793 %s declared)", name, norm.NormEnum(order, T(*act)), name)
		return norm.NormEnum(order, T(*act)), risk.SourceActionMetadata
	}
	base, src := fallback, risk.SourceDefault
	if inferred != "" {
		base, src = inferred, risk.SourceInferred
	}
	if decl != nil {
		if norm.Rank(order, declared) > norm.Rank(order, base) {
			m.note("declared %s %s raises the %s %s (server not trusted)", name, declared, src, base)
			base, src = declared, risk.SourceDeclared
		} else if norm.Rank(order, declared) < norm.Rank(order, base) {
			m.note("declared %s %s ignored: the server is not trusted and it would lower the %s %s", name, declared, src, base)
		}
	}
	if act != nil {
		implied := norm.NormEnum(order, T(*act))
		if norm.Rank(order, implied) > norm.Rank(order, base) {
			m.note("action-metadata %s %s raises the %s %s (server not trusted)", name, implied, src, base)
			base, src = implied, risk.SourceActionMetadata
		} else if norm.Rank(order, implied) < norm.Rank(order, base) {
			m.note("action-metadata %s %s ignored: the server is not trusted and it would lower the %s %s", name, implied, src, base)
		}
	}
	return base, src
}

func (m *Merger) sideEffects(cat, decl, act, inferred []string, useInference bool) ([]string, risk.Source) {
	if len(cat) > 0 {
		return risk.NormalizeSideEffects(cat), risk.SourceCatalogue
	}
	if decl != nil && m.trusted {
		return risk.NormalizeSideEffects(decl), risk.SourceDeclared
	}
	if act != nil && m.trusted {
		m.note("action-metadata: sideEffects taken as %s (server trusted, no SEP-2793 sideEffects declared)", strings.Join(act, ", "))
		return risk.NormalizeSideEffects(act), risk.SourceActionMetadata
	}
	base, src := []string{}, risk.SourceDefault
	if useInference {
		base, src = risk.NormalizeSideEffects(inferred), risk.SourceInferred
	}
	if decl != nil {
		union := risk.NormalizeSideEffects(append(slices.Clone(base), decl...))
		if len(union) > len(base) {
			m.note("declared sideEffects add to the %s ones (server not trusted)", src)
			base, src = union, risk.SourceDeclared
		}
	}
	if act != nil {
		union := risk.NormalizeSideEffects(append(slices.Clone(base), act...))
		if len(union) > len(base) {
			m.note("action-metadata sideEffects %s add to the %s ones (server not trusted)", strings.Join(act, ", "), src)
			base, src = union, risk.SourceActionMetadata
		}
	}
	return base, src
}

func (m *Merger) trust(cat, decl any, inferred int) (int, risk.Source) {
	if cat != nil {
		v, _ := risk.NormalizeTrust(cat)
		return v, risk.SourceCatalogue
	}
	var declared int
	if decl != nil {
		var ok bool
		declared, ok = risk.NormalizeTrust(decl)
		if !ok {
			got, _ := json.Marshal(decl)
			m.note("declared minTrustLevel %s is not an integer from %d to %d: read as %d", norm.OneLine(string(got), 40), risk.MinTrust, risk.MaxTrust, risk.MaxTrust)
		}
	}
	if decl != nil && m.trusted {
		return declared, risk.SourceDeclared
	}
	base, src := risk.MaxTrust, risk.SourceDefault
	if inferred != 0 {
		base, src = inferred, risk.SourceInferred
	}
	if decl != nil {
		if declared > base {
			m.note("declared minTrustLevel %d raises the %s %d (server not trusted)", declared, src, base)
			return declared, risk.SourceDeclared
		}
		if declared < base {
			m.note("declared minTrustLevel %d ignored: the server is not trusted and it would lower the %s %d", declared, src, base)
		}
	}
	return base, src
}

// Call is one tool call as the policy sees it.
type Call struct {
	Server string
	Tool   string
	// Args are the model's arguments (never secure values); they feed the
	// call-time escalators.
	Args json.RawMessage
	// ArgsCheck is the call's one check of Args (CheckArgs), when its
	// path made one: the escalators (and the audit record made from the
	// call) then do not validate Args again. The zero value: Args are
	// checked where they are read.
	ArgsCheck ArgsCheck
	// TrustLevel is the session's trust level, 1..5. Values below 1 mean no
	// trust (every tool is trust-denied); values above 5 count as 5.
	TrustLevel int
	// SessionID and Subject identify the session and whom it acts for;
	// rule expressions see them (session.id, session.subject). Gate.Check
	// fills them from the Check when empty.
	SessionID, Subject string
	// SessionValues are the NAMES of the session's values (never the
	// values), for rule expressions (session.values).
	SessionValues []string
	// ResultLabels are the distinct labels (LabelSensitive,
	// LabelUntrusted) of the session's earlier results, sorted, for rule
	// expressions (session.resultLabels).
	ResultLabels []string
	// Now is the time rule expressions see (now); zero means time.Now().
	Now time.Time
	// Tighten is an outside check's verdict on the call (a PreToolUse
	// hook). It can only tighten: ActionDeny denies (outcome
	// denied_by_rule, TightenMessage shown to the model), ActionAsk
	// raises an allow to an ask of at least one approver that is never
	// answered by a session grant; "" and ActionAllow change nothing.
	// TightenBy is recorded among the decision's rules.
	Tighten        Action
	TightenBy      string
	TightenMessage string
}

// Decision is the policy's answer for one call.
type Decision struct {
	Action Action `json:"decision"`
	// Outcome is final for allow (auto_allowed) and deny (denied_by_rule,
	// trust_denied); empty for ask, which approvers settle.
	Outcome Outcome `json:"outcome,omitempty"`
	// Approvers is how many distinct approvers an ask needs (0 otherwise).
	Approvers int `json:"approvers"`
	// Rules are the ids of every matching rule, in config order. The
	// slice is shared between decisions: read it, do not modify it.
	Rules []string `json:"rules"`
	// NoMatch is set when no rule matched and approvals.noMatch decided.
	NoMatch bool `json:"noMatch"`
	// Timeout bounds an ask: the shortest timeout among the matching ask
	// rules, else approvals.timeout, else DefaultTimeout.
	Timeout time.Duration `json:"-"`
	// Message joins the operator-written messages of the rules that
	// decided. It is meant for people, and the model is shown it on a
	// policy denial.
	Message string `json:"message,omitempty"`
	// Reason is a one-line explanation for operators (it names rules);
	// never shown to the model.
	Reason      string      `json:"reason"`
	ReasonClass ReasonClass `json:"reasonClass,omitempty"`
	// Risk is the effective metadata after the call-time escalators.
	Risk risk.Effective `json:"risk"`
	// Escalations say what the arguments raised.
	Escalations []string `json:"escalations"`
	// Unclassified: nobody classified the tool; an ask is never granted
	// for the session (see UnclassifiedAsk).
	Unclassified bool `json:"unclassified,omitempty"`
	// ExprErrors are "rule id: error" for each rule expression that failed
	// to evaluate (each such rule matched with its most restrictive
	// reading). For operators; never shown to the model.
	ExprErrors []string `json:"exprErrors,omitempty"`
	// Tightened: an outside check (Call.Tighten) asked for approval; the
	// ask is never granted for the session.
	Tightened bool `json:"tightened,omitempty"`
}

type decisionJSON Decision

// MarshalJSON adds "timeout" (a Go duration string) for asks.
func (d Decision) MarshalJSON() ([]byte, error) {
	if d.Rules == nil {
		d.Rules = []string{}
	}
	if d.Escalations == nil {
		d.Escalations = []string{}
	}
	var timeout string
	if d.Action == ActionAsk {
		timeout = d.Timeout.String()
	}
	return json.Marshal(struct {
		decisionJSON
		Timeout string `json:"timeout,omitempty"`
	}{decisionJSON(d), timeout})
}

// clampTrust is the trust level a session of level t has under the
// policy: below MinTrust none (0), at most MaxTrust and the managed
// ceiling.
func (p *Policy) clampTrust(t int) int {
	switch {
	case t < risk.MinTrust:
		return 0
	case p.trustCeiling > 0 && t > p.trustCeiling:
		return p.trustCeiling
	case t > risk.MaxTrust:
		return risk.MaxTrust
	}
	return t
}

// Decide applies the rules to one call. eff is normalised first (so a zero
// Effective is the fail-closed bucket), then the call-time escalators raise
// it from the arguments. Every matching rule counts and the most
// restrictive decision wins (deny > ask > allow); without a match,
// approvals.noMatch decides. A session trust level below the tool's
// minTrustLevel denies whatever the rules say (outcome trust_denied).
//
// Rules with a when.expr match only when the expression is true for this
// call; an expression that fails to evaluate makes its rule match with its
// most restrictive reading (an allow rule counts as an ask; see Match.Expr).
func (p *Policy) Decide(eff risk.Effective, c Call) Decision {
	return p.DecideContext(context.Background(), eff, c)
}

// DecideContext is Decide with a context that interrupts rule expressions.
func (p *Policy) DecideContext(ctx context.Context, eff risk.Effective, c Call) Decision {
	atCall, escalations := escalate(eff.Normalize(), c.Args, c.ArgsCheck)
	trust := p.clampTrust(c.TrustLevel)
	var in *exprInput
	if p.hasExpr {
		// The expressions' input points at copies made here, so a
		// policy without expressions does not move c and atCall to the
		// heap on every call (neither changes below).
		call, at := c, atCall
		in = p.newExprInput(ctx, &call, &at, trust)
	}
	ev := p.evaluate(c.Server, c.Tool, atCall, trust, in)
	if atCall.Unclassified && ev.action != ActionDeny {
		// Nobody classified the tool: whatever the rules allow, a person
		// decides each call.
		if ev.action == ActionAllow {
			ev.action, ev.approvers, ev.timeout = ActionAsk, atCall.QuorumFloor(), p.timeout
		}
		ev.reason += "; the tool is unclassified, so every call asks a person"
	}
	d := Decision{
		Action:      ev.action,
		Approvers:   ev.approvers,
		Rules:       ev.ids,
		NoMatch:     ev.noMatch,
		Timeout:     ev.timeout,
		Message:     ev.message,
		Reason:      ev.reason,
		Risk:        atCall,
		Escalations: escalations,
	}
	if in != nil {
		d.ExprErrors = in.errs
	}
	d.Unclassified = atCall.Unclassified
	if c.Tighten == ActionDeny || c.Tighten == ActionAsk {
		d.tighten(c, atCall.QuorumFloor(), p.timeout)
	}
	switch {
	case trust < atCall.TrustFloor():
		d.Action, d.Outcome, d.ReasonClass = ActionDeny, OutcomeTrustDenied, ReasonTrust
		d.Approvers, d.Timeout, d.Message = 0, 0, ""
		d.Reason = fmt.Sprintf("session trust level %d is below the tool's minTrustLevel %d", trust, atCall.MinTrustLevel)
	case d.Action == ActionDeny:
		d.Outcome, d.ReasonClass = OutcomeDeniedByRule, ReasonPolicy
	case d.Action == ActionAllow:
		d.Outcome = OutcomeAutoAllowed
	}
	return d
}

// tighten applies an outside check's deny or ask (Call.Tighten). The
// rules' ids are shared: the hook's id goes on a copy.
func (d *Decision) tighten(c Call, quorumFloor int, timeout time.Duration) {
	if c.TightenBy != "" {
		d.Rules = append(slices.Clip(d.Rules), c.TightenBy)
	}
	switch {
	case c.Tighten == ActionDeny:
		d.Action, d.Approvers, d.Timeout = ActionDeny, 0, 0
		d.Message = c.TightenMessage
		d.Reason = "denied by " + c.TightenBy
	case d.Action == ActionAllow:
		d.Action, d.Approvers, d.Timeout = ActionAsk, max(1, quorumFloor), timeout
		d.Reason += "; " + c.TightenBy + " asks for approval"
		if c.TightenMessage != "" {
			d.Message = c.TightenMessage
		}
	default: // already an ask or a deny
		d.Reason += "; " + c.TightenBy + " asks for approval"
	}
	d.Tightened = d.Action == ActionAsk
}

type evaluation struct {
	action    Action
	ids       []string
	approvers int
	timeout   time.Duration
	message   string
	reason    string
	noMatch   bool
}

// evaluate applies the rules. in carries the call for rule expressions;
// nil asks what the rules could decide for some arguments (NeverAllowed):
// then a deny rule with an expression is taken not to match, and any
// other rule with one to match. The result's ids are shared read-only when
// memoised.
func (p *Policy) evaluate(server, tool string, e risk.Effective, trust int, in *exprInput) evaluation {
	if len(p.rules) > 64 {
		states := make([]ruleState, len(p.rules))
		for i := range p.rules {
			states[i] = p.rules[i].state(server, tool, e, trust, in)
		}
		return p.evaluateRules(func(i int) ruleState { return states[i] }, e)
	}
	var key evalKey
	for i := range p.rules {
		switch p.rules[i].state(server, tool, e, trust, in) {
		case ruleFailed:
			key.failed |= 1 << i
			key.matched |= 1 << i
		case ruleMatched:
			key.matched |= 1 << i
		}
	}
	key.minApprovers = e.QuorumFloor()
	return p.evaluations.get(key, func() evaluation {
		return p.evaluateRules(func(i int) ruleState {
			switch {
			case key.failed&(1<<i) != 0:
				return ruleFailed
			case key.matched&(1<<i) != 0:
				return ruleMatched
			}
			return ruleNotMatched
		}, e)
	})
}

// ruleState is how one rule stands for one call.
type ruleState uint8

const (
	ruleNotMatched ruleState = iota
	ruleMatched
	// ruleFailed: the rule's other conditions match and its expression
	// failed to evaluate, so it matches with its most restrictive reading.
	ruleFailed
)

// action is what a rule in this state decides: a failed allow rule asks.
func (r *compiledRule) actionIn(st ruleState) Action {
	if st == ruleFailed && r.action == ActionAllow {
		return ActionAsk
	}
	return r.action
}

func (p *Policy) evaluateRules(state func(i int) ruleState, e risk.Effective) evaluation {
	ev := evaluation{ids: []string{}}
	type hit struct {
		r      *compiledRule
		action Action
		failed bool
	}
	var matched []hit
	for i := range p.rules {
		r := &p.rules[i]
		if st := state(i); st != ruleNotMatched {
			matched = append(matched, hit{r, r.actionIn(st), st == ruleFailed})
			ev.ids = append(ev.ids, r.rule.ID)
		}
	}
	if len(matched) == 0 {
		ev.action, ev.noMatch = p.noMatch, true
		ev.reason = fmt.Sprintf("no rule matched; noMatch is %s", p.noMatch)
	} else {
		ev.action = ActionAllow
		for _, h := range matched {
			ev.action = norm.MaxEnum(actionOrder, ev.action, h.action)
		}
		var deciding, messages []string
		for _, h := range matched {
			if h.action != ev.action {
				continue
			}
			id := fmt.Sprintf("%q", h.r.rule.ID)
			if h.failed {
				id += " (its expression failed to evaluate)"
			}
			deciding = append(deciding, id)
			if msg := strings.TrimSpace(h.r.rule.Message); msg != "" && !(h.failed && h.r.action != h.action) {
				messages = append(messages, msg)
			}
			if ev.action == ActionAsk {
				ev.approvers = max(ev.approvers, h.r.rule.Approvers)
				if h.r.rule.Timeout > 0 && (ev.timeout == 0 || h.r.rule.Timeout < ev.timeout) {
					ev.timeout = h.r.rule.Timeout
				}
			}
		}
		ev.message = strings.Join(messages, "; ")
		ev.reason = fmt.Sprintf("%s by rule %s", pastTense(ev.action), strings.Join(deciding, ", "))
	}
	if ev.action == ActionAsk {
		ev.approvers = min(max(ev.approvers, e.QuorumFloor()), p.maxApprovers)
		if ev.timeout == 0 {
			ev.timeout = p.timeout
		}
	} else {
		ev.approvers, ev.timeout = 0, 0
	}
	return ev
}

func pastTense(a Action) string {
	switch a {
	case ActionAllow:
		return "allowed"
	case ActionAsk:
		return "asked"
	}
	return "denied"
}

// state matches the rule against one call: its fields first, then its
// expression (see evaluate for a nil in).
func (r *compiledRule) state(server, tool string, e risk.Effective, trust int, in *exprInput) ruleState {
	if !r.matches(server, tool, e, trust) {
		return ruleNotMatched
	}
	if r.expr == nil {
		return ruleMatched
	}
	if in == nil {
		if r.action == ActionDeny {
			return ruleNotMatched
		}
		return ruleMatched
	}
	ok, err := r.expr.eval(in.ctx, in)
	switch {
	case err != nil:
		in.errs = append(in.errs, r.rule.ID+": "+norm.OneLine(err.Error(), 200))
		return ruleFailed
	case ok:
		return ruleMatched
	}
	return ruleNotMatched
}

// ArgumentRules returns the ids of the rules that apply to the tool
// (every field but when.expr matches) and whose expression reads the
// call's arguments: a decision made without arguments, as `tools` shows
// it, may differ for a call whose arguments make such an expression true
// or false. Nil when there are none.
func (p *Policy) ArgumentRules(server, tool string, eff risk.Effective, trust int) []string {
	var ids []string
	e := eff.Normalize()
	trust = p.clampTrust(trust)
	for i := range p.rules {
		r := &p.rules[i]
		if r.expr != nil && r.expr.readsArgs && r.matches(server, tool, e, trust) {
			ids = append(ids, r.rule.ID)
		}
	}
	return ids
}

// matches reports whether the rule's fields (all but when.expr) match.
func (r *compiledRule) matches(server, tool string, e risk.Effective, trust int) bool {
	switch {
	case len(r.categories) > 0 && !slices.Contains(r.categories, e.Category),
		len(r.risks) > 0 && !slices.Contains(r.risks, e.RiskLevel),
		len(r.blasts) > 0 && !slices.Contains(r.blasts, e.BlastRadius),
		len(r.reversibility) > 0 && !slices.Contains(r.reversibility, e.Reversibility),
		len(r.approval) > 0 && !slices.Contains(r.approval, e.ApprovalRecommendation),
		len(r.sideEffects) > 0 && !slices.ContainsFunc(r.sideEffects, func(s string) bool { return slices.Contains(e.SideEffects, s) }),
		len(r.servers) > 0 && !glob.MatchAny(r.servers, server),
		len(r.tools) > 0 && !glob.MatchAny(r.tools, tool),
		len(r.trust) > 0 && !slices.Contains(r.trust, trust),
		r.rule.When.MinTrustLevelAbove > 0 && e.MinTrustLevel-trust < r.rule.When.MinTrustLevelAbove:
		return false
	}
	return true
}

// NeverAllowed reports whether every call of the tool is denied in a
// session of this trust level, whatever the arguments: the trust level is
// below the tool's minTrustLevel, or the rules deny at every risk level and
// blast radius the call-time escalators can reach. The host hides such
// tools from the model. reason is for operators (it may name rules).
func (p *Policy) NeverAllowed(server, tool string, eff risk.Effective, trust int) (never bool, reason string) {
	base := eff.Normalize()
	trust = p.clampTrust(trust)
	if trust < base.TrustFloor() {
		fix := "run the session at that trust level (--trust, session.trustLevel)"
		switch {
		case base.Source.MinTrustLevel == risk.SourceDefault:
			fix += ", or classify the tool (`agenthost policy init`), since nobody did and approvals.unclassified is " + p.unclassified
		default:
			fix += ", or set a lower minTrustLevel for it in approvals.catalogue"
		}
		return true, fmt.Sprintf("needs trust level %d; the session has %d: %s", base.MinTrustLevel, trust, fix)
	}
	for i, s := range escalationStates(base) {
		ev := p.evaluate(server, tool, s, trust, nil)
		if ev.action != ActionDeny {
			return false, ""
		}
		if i == 0 {
			reason = ev.reason
		}
	}
	fix := "; `agenthost policy explain " + server + " " + tool + "` shows the rules"
	if base.Unclassified {
		fix += " (the tool is unclassified, so rules see the fail-closed values: classify it with `agenthost policy init`)"
	}
	return true, reason + fix
}

// Revision identifies the policy: "sha256:" and the hash of the effective
// configuration (the config merged with the managed policy, as JSON). Two
// policies built from the same configuration have the same revision; any
// change to a rule, the catalogue, a default or the managed policy gives
// another. A durable approval is bound to the revision it was asked
// under, and is void under another.
func (p *Policy) Revision() string { return p.revision }

func policyRevision(cfg Config, ceiling int) (string, error) {
	b, err := json.Marshal(struct {
		Config  Config `json:"config"`
		Ceiling int    `json:"ceiling"`
	}{cfg, ceiling})
	if err != nil {
		return "", fmt.Errorf("policy revision: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
