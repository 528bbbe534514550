package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules/celexpr"
)

// The two requests from Claude Code users, one rule each.
const (
	exprSelectOnly = `args.query.trim().lowerAscii().startsWith("select") && !args.query.contains(";")`
	exprLocalhost  = `urlHost(args.url) in ["localhost", "127.0.0.1", "::1"]`
)

func exprConfig(rules ...Rule) Config {
	return Config{Unclassified: UnclassifiedStrict, Rules: rules, NoMatch: "ask"}
}

func TestDecideByExpression(t *testing.T) {
	readRisk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	fixed := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	tests := []struct {
		name     string
		rule     Rule
		tool     string
		args     string
		call     Call
		want     Action
		wantErrs int
	}{
		{"select allowed", Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
			"execute_sql", `{"query":"  SELECT * FROM orders"}`, Call{}, ActionAllow, 0},
		{"delete not allowed: noMatch asks", Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
			"execute_sql", `{"query":"DELETE FROM orders"}`, Call{}, ActionAsk, 0},
		{"select with a second statement", Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
			"execute_sql", `{"query":"select 1; drop table orders"}`, Call{}, ActionAsk, 0},
		{"failed allow rule asks, never allows", Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
			"execute_sql", `{"sql":"select 1"}`, Call{}, ActionAsk, 1},
		{"failed deny rule denies", Rule{ID: "big", When: Match{Expr: `args.limit > 100`}, Decide: "deny"},
			"t", `{}`, Call{}, ActionDeny, 1},
		{"failed ask rule asks", Rule{ID: "big", When: Match{Expr: `args.limit > 100`}, Decide: "ask"},
			"t", `{"limit":"many"}`, Call{}, ActionAsk, 1},
		{"integer argument", Rule{ID: "big", When: Match{Expr: `args.limit > 100`}, Decide: "deny"},
			"t", `{"limit":101}`, Call{}, ActionDeny, 0},
		{"integer argument below", Rule{ID: "small", When: Match{Expr: `args.limit <= 100 && args.limit % 2 == 0`}, Decide: "allow"},
			"t", `{"limit":100}`, Call{}, ActionAllow, 0},
		{"double argument", Rule{ID: "r", When: Match{Expr: `args.ratio < 0.5`}, Decide: "allow"},
			"t", `{"ratio":0.25}`, Call{}, ActionAllow, 0},
		{"nested argument", Rule{ID: "r", When: Match{Expr: `args.opts.dry_run == true && size(args.ids) == 2`}, Decide: "allow"},
			"t", `{"opts":{"dry_run":true},"ids":[1,2]}`, Call{}, ActionAllow, 0},
		{"has() guards a missing key", Rule{ID: "r", When: Match{Expr: `!has(args.force) || args.force == false`}, Decide: "allow"},
			"t", `{}`, Call{}, ActionAllow, 0},
		{"optional syntax", Rule{ID: "r", When: Match{Expr: `args.?mode.orValue("read") == "read"`}, Decide: "allow"},
			"t", `{}`, Call{}, ActionAllow, 0},
		{"localhost allowed", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"http://localhost:3000/app"}`, Call{}, ActionAllow, 0},
		{"other host asks", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"https://example.com/"}`, Call{}, ActionAsk, 0},
		{"user info is not localhost", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"http://localhost@evil.example/"}`, Call{}, ActionAsk, 0},
		{"javascript URL naming localhost asks", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"javascript://localhost/%0Aalert(document.cookie)"}`, Call{}, ActionAsk, 0},
		{"file URL naming localhost asks", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"file://localhost/etc/passwd"}`, Call{}, ActionAsk, 0},
		{"websocket URL to a local debugging port asks", Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
			"browser_navigate", `{"url":"ws://localhost:9222/devtools/browser"}`, Call{}, ActionAsk, 0},
		{"loopback through the network library", Rule{ID: "nav", When: Match{Expr: `isIP(urlHost(args.url)) && ip(urlHost(args.url)).isLoopback()`}, Decide: "allow"},
			"t", `{"url":"http://127.0.0.2/"}`, Call{}, ActionAllow, 0},
		{"tool variables", Rule{ID: "r", When: Match{Expr: `tool.server == "db" && tool.name == "t" && tool.risk.category == "read" && tool.risk.minTrustLevel == 1 && !tool.unclassified && size(tool.risk.sideEffects) == 0`}, Decide: "allow"},
			"t", `{}`, Call{}, ActionAllow, 0},
		{"session variables", Rule{ID: "r", When: Match{Expr: `session.subject == "alice" && session.id == "s1" && session.trustLevel == 3 && "project" in session.values`}, Decide: "allow"},
			"t", `{}`, Call{SessionID: "s1", Subject: "alice", TrustLevel: 3, SessionValues: []string{"project"}}, ActionAllow, 0},
		{"time", Rule{ID: "hours", When: Match{Expr: `now.getHours("UTC") >= 9 && now.getHours("UTC") < 17`}, Decide: "allow"},
			"t", `{}`, Call{Now: fixed}, ActionAllow, 0},
		{"expression not evaluated when the fields do not match", Rule{ID: "r", When: Match{Tool: []string{"other"}, Expr: `args.missing`}, Decide: "deny"},
			"t", `{}`, Call{}, ActionAsk, 0},
		{"arguments not an object", Rule{ID: "r", When: Match{Expr: `size(args) == 0`}, Decide: "allow"},
			"t", `[1]`, Call{}, ActionAsk, 1},
		{"arguments not JSON", Rule{ID: "r", When: Match{Expr: `size(args) == 0`}, Decide: "allow"},
			"t", `{"a":`, Call{}, ActionAsk, 1},
		{"null arguments are an empty map", Rule{ID: "r", When: Match{Expr: `size(args) == 0`}, Decide: "allow"},
			"t", `null`, Call{}, ActionAllow, 0},
		{"dyn result that is not a bool", Rule{ID: "r", When: Match{Expr: `args.x`}, Decide: "allow"},
			"t", `{"x":"yes"}`, Call{}, ActionAsk, 1},
		{"cost budget exceeded", Rule{ID: "r", When: Match{Expr: `args.xs.all(a, args.xs.all(b, args.xs.all(c, a + b + c >= 0)))`}, Decide: "allow"},
			"t", `{"xs":[` + strings.Repeat("1,", 99) + `1]}`, Call{}, ActionAsk, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, exprConfig(tt.rule))
			c := tt.call
			c.Server, c.Tool, c.Args = "db", tt.tool, json.RawMessage(tt.args)
			if c.TrustLevel == 0 {
				c.TrustLevel = 1
			}
			d := p.Decide(readRisk, c)
			if d.Action != tt.want {
				t.Errorf("decision = %s (%s), want %s; errors %q", d.Action, d.Reason, tt.want, d.ExprErrors)
			}
			if len(d.ExprErrors) != tt.wantErrs {
				t.Errorf("expression errors = %q, want %d", d.ExprErrors, tt.wantErrs)
			}
			for _, e := range d.ExprErrors {
				if !strings.HasPrefix(e, tt.rule.ID+": ") {
					t.Errorf("error %q does not name rule %q", e, tt.rule.ID)
				}
			}
			if tt.wantErrs > 0 && !strings.Contains(d.Reason, "expression failed") {
				t.Errorf("reason %q does not say the expression failed", d.Reason)
			}
		})
	}
}

// With noMatch allow, a failed allow rule still asks: had it read as "no
// match", noMatch would have allowed the call.
func TestFailedAllowRuleWithNoMatchAllow(t *testing.T) {
	cfg := exprConfig(Rule{ID: "sql", When: Match{Expr: `int(args.query) > 1`}, Decide: "allow"})
	cfg.NoMatch = "allow"
	p := mustPolicy(t, cfg)
	for args, want := range map[string]Action{`{"query":"5"}`: ActionAllow, `{"query":"x"}`: ActionAsk, `{"query":"0"}`: ActionAllow} {
		d := p.Decide(risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), Call{Server: "db", Tool: "t", Args: json.RawMessage(args), TrustLevel: 1})
		if d.Action != want {
			t.Errorf("%s: decision = %s (%s), want %s", args, d.Action, d.Reason, want)
		}
	}
}

// An allow rule whose expression fails may not hide behind another allow
// rule: the failure raises the call to ask.
func TestFailedAllowRuleOutranksOtherAllows(t *testing.T) {
	p := mustPolicy(t, exprConfig(
		Rule{ID: "reads", When: Match{Category: []string{"read"}}, Decide: "allow"},
		Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
	))
	d := p.Decide(risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1), Call{Server: "db", Tool: "execute_sql", Args: json.RawMessage(`{}`), TrustLevel: 1})
	if d.Action != ActionAsk || d.Approvers != 1 {
		t.Fatalf("decision = %s with %d approvers (%s), want ask with 1", d.Action, d.Approvers, d.Reason)
	}
	if want := []string{"reads", "sql"}; strings.Join(d.Rules, ",") != strings.Join(want, ",") {
		t.Errorf("rules = %q, want %q", d.Rules, want)
	}
}

func TestExprCompileErrors(t *testing.T) {
	tests := []struct {
		name, expr, want string
	}{
		{"syntax", `args.query.startsWith(`, "Syntax error"},
		{"misspelt variable", `tool.nmae == "x"`, "undeclared reference"},
		{"unknown session field", `session.secret == "x"`, "undeclared reference"},
		{"not a bool", `1 + 2`, "not bool"},
		{"string result", `tool.name`, "not bool"},
		{"empty", `   `, "empty expression"},
		{"too long", strings.Repeat("true && ", MaxExprLength/8+1) + "true", "more than"},
		{"unknown function", `args.q.frobnicate()`, "undeclared reference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := exprConfig(Rule{ID: "ok", When: Match{Expr: "true"}, Decide: "allow"},
				Rule{ID: "broken-rule", When: Match{Expr: tt.expr}, Decide: "allow"})
			err := cfg.Validate()
			var fe *risk.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a FieldError", err)
			}
			if fe.Key != "rules[1].when.expr" {
				t.Errorf("key = %q, want rules[1].when.expr", fe.Key)
			}
			if !strings.Contains(fe.Msg, `rule "broken-rule"`) || !strings.Contains(fe.Msg, tt.want) {
				t.Errorf("message = %q, want the rule id and %q", fe.Msg, tt.want)
			}
			if _, err := NewPolicy(cfg); err == nil {
				t.Error("NewPolicy accepted the expression")
			}
		})
	}
}

// A deny rule with an expression depends on the arguments, so it cannot
// hide a tool; an allow rule with one keeps a noMatch deny from hiding it.
func TestNeverAllowedWithExpressions(t *testing.T) {
	risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	tests := []struct {
		name string
		cfg  Config
		want bool
	}{
		{"deny rule with expression", Config{Rules: []Rule{{ID: "d", When: Match{Expr: `args.x == 1`}, Decide: "deny"}}, NoMatch: "allow"}, false},
		{"allow rule with expression, noMatch deny", Config{Rules: []Rule{{ID: "a", When: Match{Expr: `args.x == 1`}, Decide: "allow"}}, NoMatch: "deny"}, false},
		{"static deny still hides", Config{Rules: []Rule{{ID: "a", When: Match{Expr: `args.x == 1`}, Decide: "allow"},
			{ID: "d", When: Match{Category: []string{"read"}}, Decide: "deny"}}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, tt.cfg)
			if got, why := p.NeverAllowed("s", "t", risk, 1); got != tt.want {
				t.Errorf("NeverAllowed = %v (%s), want %v", got, why, tt.want)
			}
		})
	}
}

func TestExplainShowsExpressions(t *testing.T) {
	p := mustPolicy(t, exprConfig(
		Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
		Rule{ID: "limit", When: Match{Expr: `args.limit > 10`}, Decide: "deny"},
		Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
	))
	tool := risk.ToolInfo{Name: "execute_sql", InputSchema: json.RawMessage(`{"type":"object"}`)}
	x := p.Explain("db", false, tool, Call{Args: json.RawMessage(`{"query":"select 1"}`), TrustLevel: 5})
	want := []ExprResult{
		{Rule: "sql", Expr: exprSelectOnly, Result: ExprTrue},
		{Rule: "limit", Expr: `args.limit > 10`, Result: ExprError},
		{Rule: "nav", Expr: exprLocalhost, Result: ExprNotEvaluated},
	}
	if len(x.Expressions) != len(want) {
		t.Fatalf("expressions = %+v", x.Expressions)
	}
	for i, w := range want {
		g := x.Expressions[i]
		if g.Rule != w.Rule || g.Expr != w.Expr || g.Result != w.Result || (w.Result == ExprError) != (g.Error != "") {
			t.Errorf("expression %d = %+v, want %+v", i, g, w)
		}
	}
	// A failed deny rule denies.
	if x.Decision.Action != ActionDeny {
		t.Errorf("decision = %s, want deny", x.Decision.Action)
	}
	var text bytes.Buffer
	if err := x.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"expressions:", "sql: " + exprSelectOnly, "=> true", "limit: args.limit > 10", "=> error: no such key: limit", "=> not evaluated"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	js, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(js, []byte(`"expressions":[{"rule":"sql"`)) {
		t.Errorf("JSON lacks the expressions: %s", js)
	}
}

func TestURLHost(t *testing.T) {
	tests := map[string]string{
		"http://localhost:3000/x":     "localhost",
		"HTTPS://LocalHost/":          "localhost",
		"http://[::1]:8080/":          "::1",
		"http://user@localhost/":      "",
		"http://localhost@evil.test/": "",
		"localhost:3000":              "",
		"/relative/path":              "",
		"":                            "",
		"http://%zz/":                 "",
		" http://127.0.0.1/ ":         "127.0.0.1",
		// Only http and https have a host a rule may compare: another
		// scheme naming localhost is not a local web page.
		"javascript://localhost/%0Aalert(1)": "",
		"file://localhost/etc/passwd":        "",
		"ws://localhost:9222/devtools":       "",
		"wss://localhost/":                   "",
		"ftp://127.0.0.1/":                   "",
		"HtTp://LOCALHOST/":                  "localhost",
	}
	for in, want := range tests {
		if got := celexpr.URLHost(in); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzExprCompile feeds arbitrary text to the expression compiler (the
// config is user input): it must answer with a program or an error, never
// panic, and a program must evaluate without panicking.
func FuzzExprCompile(f *testing.F) {
	for _, s := range []string{exprSelectOnly, exprLocalhost, `tool.risk.category in ["read"]`, `now > timestamp("2026-01-01T00:00:00Z")`,
		`args.xs.all(x, x > 0)`, `"a".matches("(")`, `((((`, `size(session.values) > 0`, `args.?a.?b.orValue(1) == 1`} {
		f.Add(s, `{"query":"select 1","url":"http://localhost/","xs":[1,2]}`)
	}
	f.Fuzz(func(t *testing.T, src, args string) {
		x, err := compileExpr(src)
		if err != nil {
			return
		}
		risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
		c := Call{Server: "s", Tool: "t", Args: json.RawMessage(args), TrustLevel: 1}
		p := &Policy{}
		_, _ = x.eval(t.Context(), p.newExprInput(t.Context(), &c, &risk, 1))
	})
}

// Compiled expressions are shared by every call; each call has its own
// activation. Run under -race.
func TestExprConcurrentDecisions(t *testing.T) {
	p := mustPolicy(t, exprConfig(
		Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
		Rule{ID: "nav", When: Match{Tool: []string{"browser_navigate"}, Expr: exprLocalhost}, Decide: "allow"},
	))
	risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	calls := []struct {
		tool, args string
		want       Action
	}{
		{"execute_sql", `{"query":"select 1"}`, ActionAllow},
		{"execute_sql", `{"query":"drop table t"}`, ActionAsk},
		{"execute_sql", `{}`, ActionAsk},
		{"browser_navigate", `{"url":"http://localhost/"}`, ActionAllow},
		{"browser_navigate", `{"url":"http://example.com/"}`, ActionAsk},
	}
	errs := make(chan string, 8*len(calls))
	done := make(chan struct{})
	for w := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				c := calls[(w+i)%len(calls)]
				d := p.Decide(risk, Call{Server: "db", Tool: c.tool, Args: json.RawMessage(c.args), TrustLevel: 1})
				if d.Action != c.want {
					errs <- c.tool + " " + c.args + ": " + string(d.Action)
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestArgumentRules: the rules that apply to a tool and whose expression
// reads the arguments are named, so `tools` can say that its
// argument-less decision may not be the one a call gets.
func TestArgumentRules(t *testing.T) {
	readRisk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	p, err := NewPolicy(exprConfig(
		Rule{ID: "sql", When: Match{Tool: []string{"execute_sql"}, Expr: exprSelectOnly}, Decide: "allow"},
		Rule{ID: "local", When: Match{Expr: exprLocalhost}, Decide: "allow"},
		Rule{ID: "has-url", When: Match{Tool: []string{"fetch"}, Expr: `has(args.url)`}, Decide: "ask"},
		Rule{ID: "subject", When: Match{Expr: `session.subject == "ops"`}, Decide: "allow"},
		Rule{ID: "names", When: Match{Expr: `tool.name.startsWith("get_") && now.getHours() < 18`}, Decide: "allow"},
		Rule{ID: "plain", When: Match{Category: []string{"read"}}, Decide: "allow"},
		Rule{ID: "writes", When: Match{Category: []string{"mutate"}, Expr: `args.size() > 0`}, Decide: "ask"},
	))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		tool string
		want []string
	}{
		{"execute_sql", []string{"sql", "local"}},
		{"fetch", []string{"local", "has-url"}},
		{"get_orders", []string{"local"}}, // "writes" reads args but does not apply to a read tool
	}
	for _, tt := range tests {
		if got := p.ArgumentRules("db", tt.tool, readRisk, 3); !slices.Equal(got, tt.want) {
			t.Errorf("ArgumentRules(%s) = %v, want %v", tt.tool, got, tt.want)
		}
	}
	noExpr, err := NewPolicy(exprConfig(Rule{ID: "plain", When: Match{Category: []string{"read"}}, Decide: "allow"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := noExpr.ArgumentRules("db", "execute_sql", readRisk, 3); got != nil {
		t.Errorf("a policy without expressions names %v", got)
	}
}

// exprListArgs is {"xs":[0,1,...,n-1]}.
func exprListArgs(n int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"xs":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// TestExprArgumentBounds: a rule expression sees arguments up to
// celexpr.MaxExprArgsBytes and celexpr.MaxExprArgsValues, and a bounded evaluation;
// bigger arguments or a longer evaluation fail the expression, which
// reads as the rule's most restrictive self (never an allow). One
// expression over a 20,000-item list used to run within the budget for
// seconds of CPU.
func TestExprArgumentBounds(t *testing.T) {
	readRisk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	huge := json.RawMessage(`{"s":"` + strings.Repeat("a", celexpr.MaxExprArgsBytes) + `"}`)
	tests := []struct {
		name    string
		rule    Rule
		args    json.RawMessage
		want    Action
		wantErr string // "" for none
	}{
		{"20,000 items: an allow rule asks", Rule{ID: "r", When: Match{Expr: `size(args.xs) > 0`}, Decide: "allow"},
			exprListArgs(20_000), ActionAsk, "JSON values"},
		{"20,000 items: a deny rule denies", Rule{ID: "r", When: Match{Expr: `size(args.xs) > 100000`}, Decide: "deny"},
			exprListArgs(20_000), ActionDeny, "JSON values"},
		{"20,000 items: || cannot decide around the arguments", Rule{ID: "r", When: Match{Expr: `tool.name == "t" || size(args.xs) > 0`}, Decide: "allow"},
			exprListArgs(20_000), ActionAsk, "JSON values"},
		{"20,000 items: a rule not reading them is not affected", Rule{ID: "r", When: Match{Expr: `tool.name == "t"`}, Decide: "allow"},
			exprListArgs(20_000), ActionAllow, ""},
		{"within the value bound", Rule{ID: "r", When: Match{Expr: `size(args.xs) == 9998`}, Decide: "allow"},
			exprListArgs(celexpr.MaxExprArgsValues - 2), ActionAllow, ""},
		{"one value over the bound", Rule{ID: "r", When: Match{Expr: `size(args.xs) > 0`}, Decide: "allow"},
			exprListArgs(celexpr.MaxExprArgsValues - 1), ActionAsk, "JSON values"},
		{"text over the byte bound", Rule{ID: "r", When: Match{Expr: `size(args.s) > 0`}, Decide: "allow"},
			huge, ActionAsk, "bytes"},
		// 3,000 iterations cost about 18,000 units: within the old budget
		// of 100,000, over the calibrated one.
		{"a long walk exceeds the budget", Rule{ID: "r", When: Match{Expr: `!args.xs.exists(x, x == -1)`}, Decide: "allow"},
			exprListArgs(3_000), ActionAsk, "cost limit"},
		{"a short walk is within it", Rule{ID: "r", When: Match{Expr: `!args.xs.exists(x, x == -1)`}, Decide: "allow"},
			exprListArgs(300), ActionAllow, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustPolicy(t, exprConfig(tt.rule))
			d := p.Decide(readRisk, Call{Server: "db", Tool: "t", Args: tt.args, TrustLevel: 1})
			if d.Action != tt.want {
				t.Errorf("decision = %s (%s), want %s; errors %q", d.Action, d.Reason, tt.want, d.ExprErrors)
			}
			switch {
			case tt.wantErr == "" && len(d.ExprErrors) > 0:
				t.Errorf("expression errors %q, want none", d.ExprErrors)
			case tt.wantErr != "" && (len(d.ExprErrors) != 1 || !strings.Contains(d.ExprErrors[0], tt.wantErr)):
				t.Errorf("expression errors %q, want one saying %q", d.ExprErrors, tt.wantErr)
			}
		})
	}
}

// BenchmarkExprWorstCase is the CPU one rule expression can take: the
// costliest shapes found (a walk over the largest list the bounds let
// through, nested walks) run until the cost budget stops them, and a
// list over the bounds is refused. cel-go's cost tracking grows with the
// square of the steps taken, so ExprCostLimit is chosen from these
// figures, not from the operations it counts.
func BenchmarkExprWorstCase(b *testing.B) {
	risk := risktest.Eff(risk.CategoryRead, risk.RiskLow, risk.BlastItem, risk.ApprovalNone, 1)
	cases := []struct {
		name, expr string
		args       json.RawMessage
	}{
		{"walk", `args.xs.exists(x, false)`, exprListArgs(celexpr.MaxExprArgsValues - 2)},
		{"compare", `args.xs.exists(x, x == -1)`, exprListArgs(celexpr.MaxExprArgsValues - 2)},
		{"nested", `args.xs.exists(x, args.xs.exists(y, false))`, exprListArgs(celexpr.MaxExprArgsValues - 2)},
		{"literal_lists", `[` + strings.Repeat("0,", 299) + `0].exists(a, [` + strings.Repeat("0,", 299) + `0].exists(b, false))`, json.RawMessage(`{}`)},
		{"refused_20000", `args.xs.exists(x, false)`, exprListArgs(20_000)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			x, err := compileExpr(c.expr)
			if err != nil {
				b.Fatal(err)
			}
			call := Call{Server: "s", Tool: "t", Args: c.args, TrustLevel: 1}
			p := &Policy{}
			b.ReportAllocs()
			for b.Loop() {
				in := p.newExprInput(b.Context(), &call, &risk, 1)
				if _, err := x.eval(b.Context(), in); err == nil {
					b.Fatal("the worst case evaluated within the bounds")
				}
			}
		})
	}
}
