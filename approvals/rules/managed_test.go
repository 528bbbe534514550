package rules

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
)

func mustManagedPolicy(t *testing.T, cfg Config, m *Managed) *Policy {
	t.Helper()
	p, err := NewManagedPolicy(cfg, m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A user's config can only add restrictions to a managed policy: managed
// rules always count, and the floors take the stricter value.
func TestManagedRulesCannotBeRelaxed(t *testing.T) {
	read := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	tests := []struct {
		name    string
		user    Config
		managed Managed
		tool    string
		args    string
		want    Action
		rules   []string
	}{
		{"managed deny beats user allow",
			Config{Rules: []Rule{{ID: "all", When: Match{Tool: []string{"*"}}, Decide: "allow"}}},
			Managed{Rules: []Rule{{ID: "no-drop", When: Match{Tool: []string{"drop_*"}}, Decide: "deny"}}},
			"drop_table", `{}`, ActionDeny, []string{"managed/no-drop", "all"}},
		{"managed ask beats user allow",
			Config{Rules: []Rule{{ID: "all", When: Match{Tool: []string{"*"}}, Decide: "allow"}}},
			Managed{Rules: []Rule{{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: `!args.query.lowerAscii().startsWith("select")`}, Decide: "ask"}}},
			"execute_sql", `{"query":"delete from t"}`, ActionAsk, []string{"managed/sql", "all"}},
		{"managed expression rule that is false leaves the user's decision",
			Config{Rules: []Rule{{ID: "all", When: Match{Tool: []string{"*"}}, Decide: "allow"}}},
			Managed{Rules: []Rule{{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: `!args.query.lowerAscii().startsWith("select")`}, Decide: "ask"}}},
			"execute_sql", `{"query":"select 1"}`, ActionAllow, []string{"all"}},
		{"user deny adds to a managed allow",
			Config{Rules: []Rule{{ID: "mine", When: Match{Tool: []string{"get_*"}}, Decide: "deny"}}},
			Managed{Rules: []Rule{{ID: "reads", When: Match{Category: []string{"read"}}, Decide: "allow"}}},
			"get_x", `{}`, ActionDeny, []string{"managed/reads", "mine"}},
		{"managed noMatch is a floor",
			Config{NoMatch: "allow"}, Managed{NoMatch: "deny"}, "t", `{}`, ActionDeny, []string{}},
		{"a stricter user noMatch stays",
			Config{NoMatch: "deny"}, Managed{NoMatch: "ask"}, "t", `{}`, ActionDeny, []string{}},
		{"managed noMatch allow does not relax the user's ask",
			Config{NoMatch: "ask"}, Managed{NoMatch: "allow"}, "t", `{}`, ActionAsk, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustManagedPolicy(t, tt.user, &tt.managed)
			d := p.Decide(read, Call{Server: "db", Tool: tt.tool, Args: json.RawMessage(tt.args), TrustLevel: 1})
			if d.Action != tt.want {
				t.Errorf("decision = %s (%s), want %s", d.Action, d.Reason, tt.want)
			}
			if strings.Join(d.Rules, ",") != strings.Join(tt.rules, ",") {
				t.Errorf("rules = %q, want %q", d.Rules, tt.rules)
			}
		})
	}
}

func TestManagedUnclassifiedFloor(t *testing.T) {
	tests := []struct{ user, managed, want string }{
		{UnclassifiedInfer, UnclassifiedAsk, UnclassifiedAsk},
		{UnclassifiedInfer, UnclassifiedStrict, UnclassifiedStrict},
		{UnclassifiedStrict, UnclassifiedAsk, UnclassifiedStrict},
		{"", UnclassifiedInfer, UnclassifiedAsk}, // the user's default ask is already stricter
		{UnclassifiedInfer, "", UnclassifiedInfer},
		{"", UnclassifiedStrict, UnclassifiedStrict},
	}
	for _, tt := range tests {
		p := mustManagedPolicy(t, Config{Unclassified: tt.user}, &Managed{Unclassified: tt.managed})
		if p.unclassified != tt.want {
			t.Errorf("user %q, managed %q: unclassified = %q, want %q", tt.user, tt.managed, p.unclassified, tt.want)
		}
	}
}

// The managed catalogue comes first: the administrator's classification
// of a tool is the one used, whatever the user's catalogue says.
func TestManagedCatalogueWins(t *testing.T) {
	s := func(v string) *string { return &v }
	user := Config{Catalogue: []CatalogueEntry{{Server: "*", Tool: "*", Metadata: risk.RawMetadata{Category: s("read"), RiskLevel: s("low")}}}}
	managed := &Managed{Catalogue: []CatalogueEntry{{Server: "prod", Tool: "*", Metadata: risk.RawMetadata{Category: s("destroy"), RiskLevel: s("critical")}}}}
	p := mustManagedPolicy(t, user, managed)
	if e := p.Effective("prod", false, risk.ToolInfo{Name: "get_x"}); e.Category != risk.CategoryDestroy || e.RiskLevel != risk.RiskCritical {
		t.Errorf("prod tool: %s/%s, want the managed destroy/critical", e.Category, e.RiskLevel)
	}
	if e := p.Effective("dev", false, risk.ToolInfo{Name: "get_x"}); e.Category != risk.CategoryRead {
		t.Errorf("dev tool: %s, want the user's read", e.Category)
	}
}

func TestManagedTrustCeiling(t *testing.T) {
	p := mustManagedPolicy(t, Config{NoMatch: "allow"}, &Managed{MaxTrustLevel: 2})
	tool := risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalNone, 3)
	if d := p.Decide(tool, Call{Server: "s", Tool: "t", Args: json.RawMessage(`{}`), TrustLevel: 5}); d.Outcome != OutcomeTrustDenied {
		t.Errorf("trust 5 capped at 2 on a minTrustLevel 3 tool: %s/%s, want trust_denied", d.Action, d.Outcome)
	}
	if never, _ := p.NeverAllowed("s", "t", tool, 5); !never {
		t.Error("NeverAllowed ignores the ceiling")
	}
	if d := p.Decide(risktest.Eff(risk.CategoryMutate, risk.RiskMedium, risk.BlastItem, risk.ApprovalNone, 2), Call{Server: "s", Tool: "t", TrustLevel: 5}); d.Action != ActionAllow {
		t.Errorf("minTrustLevel 2 tool: %s, want allow", d.Action)
	}
	cel := mustManagedPolicy(t, Config{Rules: []Rule{{ID: "r", When: Match{Expr: "session.trustLevel == 2"}, Decide: "allow"}}}, &Managed{MaxTrustLevel: 2})
	if d := cel.Decide(risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), Call{Server: "s", Tool: "t", TrustLevel: 4}); d.Action != ActionAllow {
		t.Errorf("expressions see %s, want the capped trust level", d.Reason)
	}
	x := p.Explain("s", false, risk.ToolInfo{Name: "t"}, Call{TrustLevel: 4})
	if !strings.Contains(strings.Join(x.Notes, "\n"), "capped at 2 by the managed policy") {
		t.Errorf("explain notes lack the cap: %q", x.Notes)
	}
}

func TestManagedValidation(t *testing.T) {
	tests := []struct {
		name    string
		user    Config
		managed Managed
		wantKey string
	}{
		{"user rule in the managed namespace", Config{Rules: []Rule{{ID: "managed/x", Decide: "allow"}}}, Managed{}, "rules[0].id"},
		{"managed rule without decide", Config{}, Managed{Rules: []Rule{{ID: "x"}}}, "rules[0].decide"},
		{"managed expression that does not compile", Config{}, Managed{Rules: []Rule{{ID: "x", When: Match{Expr: "tool.nmae"}, Decide: "deny"}}}, "rules[0].when.expr"},
		{"managed trust ceiling out of range", Config{}, Managed{MaxTrustLevel: 6}, "maxTrustLevel"},
		{"managed noMatch unknown", Config{}, Managed{NoMatch: "maybe"}, "noMatch"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewManagedPolicy(tt.user, &tt.managed)
			var fe *risk.FieldError
			if !errors.As(err, &fe) || fe.Key != tt.wantKey {
				t.Errorf("error %v, want one keyed %s", err, tt.wantKey)
			}
		})
	}
	// The same rule id in both is fine: the managed one is prefixed.
	if _, err := NewManagedPolicy(Config{Rules: []Rule{{ID: "x", Decide: "allow"}}}, &Managed{Rules: []Rule{{ID: "x", Decide: "deny"}}}); err != nil {
		t.Errorf("shared id: %v", err)
	}
}
