package rules

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/internal/glob"
)

// contractConfig is the approvals example of the configuration reference
// (docs/config.md).
func contractConfig() Config {
	s := func(v string) *string { return &v }
	return Config{
		Unclassified: UnclassifiedStrict,
		Catalogue: []CatalogueEntry{{Server: "orders", Tool: "get_*", Metadata: risk.RawMetadata{
			Category: s("read"), RiskLevel: s("low"), BlastRadius: s("item"), MinTrustLevel: 1,
			ApprovalRecommendation: s("none"), Reversibility: s("auto")}}},
		Rules: []Rule{
			{ID: "reads", When: Match{Category: []string{"read", "observe"}}, Decide: "allow"},
			{ID: "writes", When: Match{Category: []string{"mutate"}}, Decide: "ask", Approvers: 1},
			{ID: "deletes", When: Match{Category: []string{"delete", "destroy"}}, Decide: "ask", Approvers: 2, Timeout: 10 * time.Minute},
			{ID: "wide", When: Match{BlastRadius: []string{"organization", "global"}}, Decide: "deny",
				Message: "organization-wide changes are not allowed from agents"},
		},
		NoMatch: "ask",
		Timeout: 5 * time.Minute,
	}
}

func TestDecideRuleCombination(t *testing.T) {
	p := mustPolicy(t, contractConfig())
	type want struct {
		action    Action
		outcome   Outcome
		approvers int
		rules     []string
		timeout   time.Duration
		message   string
		noMatch   bool
	}
	tests := []struct {
		name string
		eff  risk.Effective
		args string
		want want
	}{
		{"read allows", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), ``,
			want{ActionAllow, OutcomeAutoAllowed, 0, []string{"reads"}, 0, "", false}},
		{"mutate asks one", risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalSingle, 1), ``,
			want{ActionAsk, "", 1, []string{"writes"}, 5 * time.Minute, "", false}},
		{"recommendation multi raises approvers", risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastNamespace, risk.ApprovalMulti, 1), ``,
			want{ActionAsk, "", 2, []string{"writes"}, 5 * time.Minute, "", false}},
		{"delete asks two with rule timeout", risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), ``,
			want{ActionAsk, "", 2, []string{"deletes"}, 10 * time.Minute, "", false}},
		{"deny beats ask over all matching rules", risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastOrganization, risk.ApprovalSingle, 1), ``,
			want{ActionDeny, OutcomeDeniedByRule, 0, []string{"deletes", "wide"}, 0, "organization-wide changes are not allowed from agents", false}},
		{"deny beats allow", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastGlobal, risk.ApprovalNone, 1), ``,
			want{ActionDeny, OutcomeDeniedByRule, 0, []string{"reads", "wide"}, 0, "organization-wide changes are not allowed from agents", false}},
		{"no match falls to noMatch ask, at least one approver", risktest.Eff(risk.CategoryUtility, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), ``,
			want{ActionAsk, "", 1, []string{}, 5 * time.Minute, "", true}},
		{"fail-closed bucket is denied (global)", risk.Effective{}, ``,
			want{ActionDeny, OutcomeDeniedByRule, 0, []string{"deletes", "wide"}, 0, "organization-wide changes are not allowed from agents", false}},
		{"escalated blast radius hits the deny rule", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastCluster, risk.ApprovalNone, 1), `{"cluster":"*"}`,
			want{ActionDeny, OutcomeDeniedByRule, 0, []string{"reads", "wide"}, 0, "organization-wide changes are not allowed from agents", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.eff, Call{Server: "orders", Tool: "t", Args: json.RawMessage(tt.args), TrustLevel: 5})
			got := want{d.Action, d.Outcome, d.Approvers, d.Rules, d.Timeout, d.Message, d.NoMatch}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got)\n%s\nreason: %s", diff, d.Reason)
			}
			if d.Action == ActionDeny && d.ReasonClass != ReasonPolicy {
				t.Errorf("reason class %q", d.ReasonClass)
			}
		})
	}
}

func TestDecideAskCombinesApproversAndTimeouts(t *testing.T) {
	p := mustPolicy(t, Config{Rules: []Rule{
		{ID: "a", When: Match{Category: []string{"mutate"}}, Decide: "ask", Approvers: 1, Timeout: time.Minute},
		{ID: "b", When: Match{RiskLevel: []string{"high"}}, Decide: "ask", Approvers: 3, Timeout: 10 * time.Second},
		{ID: "c", When: Match{Server: []string{"prod-*"}}, Decide: "ask"},
		{ID: "ok", When: Match{Tool: []string{"update_*"}}, Decide: "allow"},
	}})
	d := p.Decide(risktest.Eff(risk.CategoryMutate, risk.RiskHigh, risk.BlastItem, risk.ApprovalNone, 1), Call{Server: "prod-eu", Tool: "update_x", TrustLevel: 3})
	if d.Action != ActionAsk || d.Approvers != 3 || d.Timeout != 10*time.Second {
		t.Errorf("got %s approvers=%d timeout=%s, want ask 3 10s", d.Action, d.Approvers, d.Timeout)
	}
	if want := []string{"a", "b", "c", "ok"}; !slices.Equal(d.Rules, want) {
		t.Errorf("rules %v, want %v", d.Rules, want)
	}
	// Without rule timeouts the config timeout applies, else the default.
	d = p.Decide(risktest.Eff(risk.CategoryUtility, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), Call{Server: "prod-eu", Tool: "x", TrustLevel: 3})
	if d.Action != ActionAsk || d.Timeout != DefaultTimeout || d.Approvers != 1 {
		t.Errorf("got %s timeout=%s approvers=%d", d.Action, d.Timeout, d.Approvers)
	}
}

func TestDecideTrustGating(t *testing.T) {
	p := mustPolicy(t, Config{NoMatch: "allow", Rules: []Rule{
		{ID: "reads", When: Match{Category: []string{"read"}}, Decide: "allow"},
		{ID: "juniors", When: Match{TrustLevel: []int{1}, Category: []string{"mutate"}}, Decide: "deny"},
		{ID: "gap", When: Match{MinTrustLevelAbove: 0}, Decide: "allow"},
	}})
	tests := []struct {
		name    string
		eff     risk.Effective
		trust   int
		action  Action
		outcome Outcome
	}{
		{"trust at minimum allows", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 3), 3, ActionAllow, OutcomeAutoAllowed},
		{"trust below minimum denies even an allow rule", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 3), 2, ActionDeny, OutcomeTrustDenied},
		{"no trust denies everything", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 0, ActionDeny, OutcomeTrustDenied},
		{"trust above 5 counts as 5", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 5), 9, ActionAllow, OutcomeAutoAllowed},
		{"unset minTrustLevel is 5", risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 0), 4, ActionDeny, OutcomeTrustDenied},
		{"rule on session trust level", risktest.Eff(risk.CategoryMutate, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 1, ActionDeny, OutcomeDeniedByRule},
		{"rule on session trust level, other level", risktest.Eff(risk.CategoryMutate, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 2, ActionAllow, OutcomeAutoAllowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p.Decide(tt.eff, Call{Server: "s", Tool: "t", TrustLevel: tt.trust})
			if d.Action != tt.action || d.Outcome != tt.outcome {
				t.Errorf("got %s/%s (%s), want %s/%s", d.Action, d.Outcome, d.Reason, tt.action, tt.outcome)
			}
			if d.Outcome == OutcomeTrustDenied && (d.ReasonClass != ReasonTrust || d.Approvers != 0) {
				t.Errorf("trust denial: reason class %q approvers %d", d.ReasonClass, d.Approvers)
			}
		})
	}
}

func TestRuleMatchFields(t *testing.T) {
	p := mustPolicy(t, Config{NoMatch: "allow", Rules: []Rule{
		{ID: "exfil", When: Match{SideEffects: []string{"Data_Exfiltration"}}, Decide: "deny"},
		{ID: "irreversible", When: Match{Reversibility: []string{"none"}}, Decide: "deny"},
		{ID: "multi", When: Match{ApprovalRecommendation: []string{"multi"}}, Decide: "deny"},
		{ID: "tool", When: Match{Server: []string{"db"}, Tool: []string{"drop_[a-c]*"}}, Decide: "deny"},
		{ID: "gap", When: Match{MinTrustLevelAbove: 2}, Decide: "deny"},
	}})
	base := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 1)
	tests := []struct {
		name   string
		modify func(*risk.Effective)
		server string
		tool   string
		rule   string
	}{
		{"side effect", func(e *risk.Effective) { e.SideEffects = []string{"cost", "data_exfiltration"} }, "s", "t", "exfil"},
		{"reversibility", func(e *risk.Effective) { e.Reversibility = risk.ReversibleNone }, "s", "t", "irreversible"},
		{"approval recommendation", func(e *risk.Effective) { e.ApprovalRecommendation = risk.ApprovalMulti }, "s", "t", "multi"},
		{"server and tool globs", func(*risk.Effective) {}, "db", "drop_cache", "tool"},
		{"tool glob class miss", func(*risk.Effective) {}, "db", "drop_x", ""},
		{"server glob miss", func(*risk.Effective) {}, "db2", "drop_a", ""},
		{"nothing", func(*risk.Effective) {}, "s", "t", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base.Clone()
			tt.modify(&e)
			d := p.Decide(e, Call{Server: tt.server, Tool: tt.tool, TrustLevel: 5})
			var want []string
			if tt.rule != "" {
				want = []string{tt.rule}
			}
			if !slices.Equal(d.Rules, want) && !(len(d.Rules) == 0 && len(want) == 0) {
				t.Errorf("rules %v, want %v", d.Rules, want)
			}
		})
	}
	// minTrustLevelAbove: tool needs 4, trust 2 -> gap 2 matches (and the
	// trust gate denies anyway); trust 3 is trust-denied but gap 1 does not match.
	d := p.Decide(risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 4), Call{TrustLevel: 2})
	if !slices.Contains(d.Rules, "gap") {
		t.Errorf("gap rule did not match: %v", d.Rules)
	}
	d = p.Decide(risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 4), Call{TrustLevel: 3})
	if slices.Contains(d.Rules, "gap") {
		t.Errorf("gap rule matched a gap of 1: %v", d.Rules)
	}
}

func TestEscalatorsOnlyRaise(t *testing.T) {
	argsList := []string{
		``, `null`, `{}`, `[]`, `"x"`, `{`, `{} {}`,
		`{"force":true}`, `{"force":"false"}`, `{"force":0}`, `{"Force":1}`, `{"recursive":"yes"}`,
		`{"options":{"cascade":true}}`, `{"allNamespaces":true}`, `{"all-namespaces":"true"}`,
		`{"namespace":"*"}`, `{"namespace":["a","*"]}`, `{"cluster":"*"}`, `{"orgId":"*"}`, `{"tenant":" * "}`,
		`{"namespace":"default","force":false}`, `{"a":{"b":{"c":{"namespace":"*","recursive":true}}}}`,
	}
	effs := []risk.Effective{
		risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1),
		risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastNamespace, risk.ApprovalSingle, 3),
		risktest.Eff(risk.CategoryDestroy, risk.RiskCritical, risk.BlastGlobal, risk.ApprovalMulti, 5),
		risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastOrganization, risk.ApprovalSingle, 2, "cost"),
	}
	for _, e := range effs {
		base := e.Normalize()
		for _, a := range argsList {
			got, _ := escalate(base, json.RawMessage(a), ArgsCheck{})
			if got.RiskLevel.Rank() < base.RiskLevel.Rank() || got.BlastRadius.Rank() < base.BlastRadius.Rank() ||
				got.Category != base.Category || got.Reversibility != base.Reversibility ||
				got.ApprovalRecommendation != base.ApprovalRecommendation || got.MinTrustLevel != base.MinTrustLevel ||
				!slices.Equal(got.SideEffects, base.SideEffects) {
				t.Errorf("Escalate(%s, %s) lowered or changed: %+v", base.RiskLevel, a, got)
			}
			if got.RiskLevel.Rank() > base.RiskLevel.Rank()+1 {
				t.Errorf("Escalate(%s) raised riskLevel more than one grade: %s -> %s", a, base.RiskLevel, got.RiskLevel)
			}
		}
	}
}

func TestEscalate(t *testing.T) {
	base := risktest.Eff(risk.CategoryDelete, risk.RiskMedium, risk.BlastItem, risk.ApprovalSingle, 2).Normalize()
	tests := []struct {
		args  string
		risk  risk.RiskLevel
		blast risk.BlastRadius
	}{
		{``, risk.RiskMedium, risk.BlastItem},
		{`{}`, risk.RiskMedium, risk.BlastItem},
		{`{"force":true}`, risk.RiskHigh, risk.BlastItem},
		{`{"force":true,"recursive":true,"cascade":1}`, risk.RiskHigh, risk.BlastItem},
		{`{"force":"no"}`, risk.RiskMedium, risk.BlastItem},
		{`{"force":false}`, risk.RiskMedium, risk.BlastItem},
		{`{"-f":true}`, risk.RiskMedium, risk.BlastItem},
		{`{"all_namespaces":true}`, risk.RiskHigh, risk.BlastCluster},
		{`{"namespace":"*"}`, risk.RiskMedium, risk.BlastCluster},
		{`{"namespace":"prod"}`, risk.RiskMedium, risk.BlastItem},
		{`{"cluster":"*"}`, risk.RiskMedium, risk.BlastOrganization},
		{`{"organization":"*"}`, risk.RiskMedium, risk.BlastGlobal},
		{`{"spec":{"targets":[{"namespace":"*"}]}}`, risk.RiskMedium, risk.BlastCluster},
		{`[1,2]`, risk.RiskHigh, risk.BlastItem},
		{`not json`, risk.RiskHigh, risk.BlastItem},
		{`{"a":1} trailing`, risk.RiskHigh, risk.BlastItem},
		{strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), risk.RiskHigh, risk.BlastItem},
	}
	for _, tt := range tests {
		got, notes := escalate(base, json.RawMessage(tt.args), CheckArgs(json.RawMessage(tt.args)))
		if got.RiskLevel != tt.risk || got.BlastRadius != tt.blast {
			t.Errorf("Escalate(%.40s) = %s/%s, want %s/%s", tt.args, got.RiskLevel, got.BlastRadius, tt.risk, tt.blast)
		}
		changed := got.RiskLevel != base.RiskLevel || got.BlastRadius != base.BlastRadius
		if changed != (len(notes) > 0) {
			t.Errorf("Escalate(%.40s): changed=%v but notes %q", tt.args, changed, notes)
		}
	}
}

func TestNeverAllowed(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		eff   risk.Effective
		trust int
		want  bool
	}{
		{"trust too low", Config{NoMatch: "allow"}, risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 4), 3, true},
		{"allowed", Config{NoMatch: "allow"}, risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 1, false},
		{"static deny rule", Config{Rules: []Rule{{ID: "d", When: Match{Category: []string{"destroy"}}, Decide: "deny"}}},
			risktest.Eff(risk.CategoryDestroy, risk.RiskHigh, risk.BlastItem, risk.ApprovalMulti, 1), 5, true},
		{"deny on high escapes via force (critical)", Config{Rules: []Rule{{ID: "d", When: Match{RiskLevel: []string{"high"}}, Decide: "deny"}}},
			risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), 5, false},
		{"deny on high and critical", Config{Rules: []Rule{{ID: "d", When: Match{RiskLevel: []string{"high", "critical"}}, Decide: "deny"}}},
			risktest.Eff(risk.CategoryDelete, risk.RiskHigh, risk.BlastItem, risk.ApprovalSingle, 1), 5, true},
		{"deny on namespace escapes via namespace *", Config{Rules: []Rule{{ID: "d", When: Match{BlastRadius: []string{"namespace"}}, Decide: "deny"}}},
			risktest.Eff(risk.CategoryMutate, risk.RiskLow, risk.BlastNamespace, risk.ApprovalSingle, 1), 5, false},
		{"noMatch deny, no rules", Config{NoMatch: "deny"}, risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 5, true},
		{"ask is not never", Config{NoMatch: "ask"}, risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg)
			got, reason := p.NeverAllowed("s", "t", tt.eff, tt.trust)
			if got != tt.want {
				t.Errorf("NeverAllowed = %v (%s), want %v", got, reason, tt.want)
			}
			if got && reason == "" {
				t.Error("no reason")
			}
			// Consistency with Decide: when never allowed, no escalation state is allowed.
			if got {
				for _, args := range []string{`{}`, `{"force":true}`, `{"namespace":"*","force":true}`, `{"cluster":"*"}`} {
					if d := p.Decide(tt.eff, Call{Server: "s", Tool: "t", Args: json.RawMessage(args), TrustLevel: tt.trust}); d.Action != ActionDeny {
						t.Errorf("NeverAllowed but Decide(%s) = %s", args, d.Action)
					}
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	s := func(v string) *string { return &v }
	tests := []struct {
		name string
		cfg  Config
		want []string // one FieldError message each, in order
	}{
		{"contract example is valid", contractConfig(), nil},
		{"empty is valid", Config{}, nil},
		{"unknown decide", Config{Rules: []Rule{{ID: "a", Decide: "allow"}, {ID: "b", Decide: "ask"}, {ID: "c", Decide: "permit"}}},
			[]string{`rules[2].decide: unknown value "permit" (want allow, ask or deny)`}},
		{"missing decide", Config{Rules: []Rule{{ID: "a"}}}, []string{`rules[0].decide: required (want allow, ask or deny)`}},
		{"empty and duplicate ids", Config{Rules: []Rule{{ID: "a", Decide: "allow"}, {Decide: "allow"}, {ID: "a", Decide: "deny"}}},
			[]string{`rules[1].id: required`, `rules[2].id: duplicate id "a" (also rules[0])`}},
		{"too many approvers", Config{Rules: []Rule{{ID: "a", Decide: "ask", Approvers: 11}}},
			[]string{`rules[0].approvers: needs 11 distinct approvers but at most 10 can exist (maxApprovers)`}},
		{"maxApprovers from config", Config{MaxApprovers: 3, Rules: []Rule{{ID: "a", Decide: "ask", Approvers: 4}}},
			[]string{`rules[0].approvers: needs 4 distinct approvers but at most 3 can exist (maxApprovers)`}},
		{"approvers on allow", Config{Rules: []Rule{{ID: "a", Decide: "allow", Approvers: 1, Timeout: time.Second}}},
			[]string{`rules[0].approvers: only valid with decide: ask`, `rules[0].timeout: only valid with decide: ask`}},
		{"negative approvers and timeout", Config{Timeout: -1, Rules: []Rule{{ID: "a", Decide: "ask", Approvers: -1, Timeout: -time.Second}}},
			[]string{`timeout: must not be negative, got -1ns`, `rules[0].approvers: must not be negative, got -1`, `rules[0].timeout: must not be negative, got -1s`}},
		{"unknown enums in when", Config{Rules: []Rule{{ID: "a", Decide: "deny", When: Match{Category: []string{"read", "nuke"}, RiskLevel: []string{"HIGH"},
			BlastRadius: []string{"world"}, Reversibility: []string{"yes"}, ApprovalRecommendation: []string{"dual"}, TrustLevel: []int{0}, MinTrustLevelAbove: 7}}}},
			[]string{`rules[0].when.category[1]: unknown value "nuke" (want read, observe, utility, mutate, delete or destroy)`,
				`rules[0].when.riskLevel[0]: unknown value "HIGH" (want low, medium, high or critical)`,
				`rules[0].when.blastRadius[0]: unknown value "world" (want item, namespace, cluster, organization or global)`,
				`rules[0].when.reversibility[0]: unknown value "yes" (want auto, manual or none)`,
				`rules[0].when.approvalRecommendation[0]: unknown value "dual" (want none, single or multi)`,
				`rules[0].when.trustLevel[0]: must be from 1 to 5, got 0`,
				`rules[0].when.minTrustLevelAbove: must be from 0 to 4, got 7`}},
		{"invalid globs", Config{Rules: []Rule{{ID: "a", Decide: "deny", When: Match{Tool: []string{"get_["}, Server: []string{`x\`}}}},
			Catalogue: []CatalogueEntry{{Server: "", Tool: "[z-a]", Metadata: risk.RawMetadata{RiskLevel: s("low")}}}},
			[]string{`catalogue[0].server: required (use "*" for any)`,
				`catalogue[0].tool: invalid glob "[z-a]": character class range is out of order`,
				`rules[0].when.server[0]: invalid glob "x\\": pattern ends with a backslash`,
				`rules[0].when.tool[0]: invalid glob "get_[": unterminated character class`}},
		{"catalogue metadata", Config{Catalogue: []CatalogueEntry{
			{Server: "*", Tool: "*", Metadata: risk.RawMetadata{RiskLevel: s("hgh"), MinTrustLevel: "3", SideEffects: []string{" "}}},
			{Server: "*", Tool: "x"},
			{Server: "*", Tool: "y", Metadata: risk.RawMetadata{MinTrustLevel: 2.5}},
			{Server: "*", Tool: "z", Metadata: risk.RawMetadata{MinTrustLevel: 0}},
		}},
			[]string{`catalogue[0].metadata.riskLevel: unknown value "hgh" (want low, medium, high or critical)`,
				`catalogue[0].metadata.minTrustLevel: must be an integer from 1 to 5, got "3"`,
				`catalogue[0].metadata.sideEffects[0]: empty side effect`,
				`catalogue[1].metadata: classifies nothing (set at least one field)`,
				`catalogue[2].metadata.minTrustLevel: must be an integer from 1 to 5, got 2.5`,
				`catalogue[3].metadata.minTrustLevel: must be an integer from 1 to 5, got 0`}},
		{"top-level enums", Config{Unclassified: "lenient", NoMatch: "maybe", MaxApprovers: 1000},
			[]string{`unclassified: unknown value "lenient" (want ask, strict or infer)`,
				`noMatch: unknown value "maybe" (want allow, ask or deny)`,
				`maxApprovers: must be between 1 and 100, got 1000`}},
		{"extra verbs", Config{ExtraVerbs: map[string][]string{"zap": {"x"}, "delete": {"ok", "Not OK"}}},
			[]string{`extraVerbs.delete[1]: verb "Not OK" must be one lower-case ASCII word (letters and digits)`,
				`extraVerbs.zap: unknown category "zap" (want read, observe, utility, mutate, delete or destroy)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			var got []string
			if err != nil {
				var errs []error
				if j, ok := err.(interface{ Unwrap() []error }); ok {
					errs = j.Unwrap()
				} else {
					errs = []error{err}
				}
				for _, e := range errs {
					var fe *risk.FieldError
					if !errors.As(e, &fe) {
						t.Errorf("%v is not a *FieldError", e)
					}
					got = append(got, e.Error())
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if _, perr := NewPolicy(tt.cfg); (perr == nil) != (tt.want == nil) {
				t.Errorf("NewPolicy error = %v", perr)
			}
		})
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern string
		name    string
		want    bool
	}{
		{"*", "anything/at.all", true},
		{"get_*", "get_order", true},
		{"get_*", "xget_order", false},
		{"*.delete", "k8s/pods.delete", true},
		{"get_?", "get_a", true},
		{"get_?", "get_ab", false},
		{"[!a-c]x", "dx", true},
		{"[!a-c]x", "ax", false},
		{`get_\*`, "get_*", true},
		{`get_\*`, "get_x", false},
		{"a.b", "aXb", false},
		{"exact", "exact", true},
		{"exact", "Exact", false},
	}
	for _, tt := range tests {
		g, err := glob.Compile(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		if got := g.Match(tt.name); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
	for _, name := range []string{"plain", "we*ird?[x]\\"} {
		g, err := glob.Compile(norm.EscapeGlob(name))
		if err != nil || !g.Match(name) || g.Match(name+"x") {
			t.Errorf("EscapeGlob(%q) = %q does not match exactly itself (err %v)", name, norm.EscapeGlob(name), err)
		}
	}
}

// The memo of evaluations must never change a decision: every evaluation,
// served from the memo or not, equals one computed from the rules.
func TestMemoisedEvaluationsEqualFreshOnes(t *testing.T) {
	cfg := contractConfig()
	cfg.Rules = append(cfg.Rules,
		Rule{ID: "prod", When: Match{Server: []string{"prod-*"}}, Decide: "ask", Approvers: 2},
		Rule{ID: "updates", When: Match{Tool: []string{"update_*"}}, Decide: "ask", Timeout: time.Minute})
	p := mustPolicy(t, cfg)
	var cases int
	for range 2 { // the second pass is served from the memo
		for _, server := range []string{"orders", "prod-eu"} {
			for _, tool := range []string{"get_order", "update_order"} {
				for _, cat := range []risk.Category{risk.CategoryRead, risk.CategoryMutate, risk.CategoryDelete, risk.CategoryUtility} {
					for _, blast := range []risk.BlastRadius{risk.BlastItem, risk.BlastGlobal} {
						for _, approval := range []risk.ApprovalRecommendation{risk.ApprovalNone, risk.ApprovalSingle, risk.ApprovalMulti} {
							for trust := 1; trust <= 5; trust += 2 {
								e := risktest.Eff(cat, risk.RiskMedium, blast, approval, 1).Normalize()
								got := p.evaluate(server, tool, e, trust, nil)
								want := p.evaluateRules(func(i int) ruleState { return p.rules[i].state(server, tool, e, trust, nil) }, e)
								if diff := cmp.Diff(want, got, cmp.AllowUnexported(evaluation{})); diff != "" {
									t.Fatalf("%s/%s %s %s %s trust %d: (-fresh +memoised)\n%s", server, tool, cat, blast, approval, trust, diff)
								}
								cases++
							}
						}
					}
				}
			}
		}
	}
	if p.evaluations.len() == 0 || p.evaluations.len() >= cases/2 {
		t.Errorf("%d memoised evaluations for %d distinct cases: the memo is not used", p.evaluations.len(), cases/2)
	}
}

// Effective's memo must never change an answer: tools that differ only in
// name share it, tools that differ in anything it depends on do not.
func TestMemoisedEffectiveEqualsFresh(t *testing.T) {
	for _, mode := range []string{UnclassifiedStrict, UnclassifiedInfer} {
		cfg := contractConfig()
		cfg.Unclassified = mode
		p := mustPolicy(t, cfg)
		tools := []risk.ToolInfo{
			{Name: "get_order", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "get_customer", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "delete_order", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "delete_order", Annotations: json.RawMessage(`{"destructiveHint":true,"category":"delete"}`)},
			{Name: "list_things"},
			{Name: "drop_table", Annotations: json.RawMessage(`{"category":"destroy","blastRadius":"global"}`)},
			{Name: "get_order", Annotations: json.RawMessage(`not json`)},
		}
		for range 2 { // the second pass is served from the memo
			for _, server := range []string{"orders", "billing"} {
				for _, trusted := range []bool{false, true} {
					for _, tool := range tools {
						want, _ := p.effective(server, trusted, tool, false)
						got := p.Effective(server, trusted, tool)
						if diff := cmp.Diff(want, got); diff != "" {
							t.Fatalf("%s: %s/%s trusted=%v %s: (-fresh +memoised)\n%s", mode, server, tool.Name, trusted, tool.Annotations, diff)
						}
					}
				}
			}
		}
		if mode == UnclassifiedStrict && p.effectives.len() == 0 {
			t.Error("nothing memoised")
		}
	}
}
