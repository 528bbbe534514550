package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// exprShop is a server with the two tools of the README's rule expressions,
// both classified as harmless reads, under rules that allow them only for
// the arguments the expressions accept (noMatch asks; no terminal, so an
// ask is denied).
func exprShop(t *testing.T, rules []obj) (cfg, record string) {
	t.Helper()
	dir := t.TempDir()
	record = filepath.Join(dir, "record.jsonl")
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "execute_sql", "inputSchema": obj{"type": "object", "properties": obj{"query": obj{"type": "string"}}},
			"x-test": obj{"text": "rows"}},
		{"name": "browser_navigate", "inputSchema": obj{"type": "object", "properties": obj{"url": obj{"type": "string"}}},
			"x-test": obj{"text": "navigated"}},
	})
	approvals := allowAll()
	approvals["noMatch"] = "ask"
	approvals["rules"] = rules
	cfg = writeConfig(t, obj{"mcpServers": obj{"db": stdioServer(tools, record)}, "approvals": approvals})
	return cfg, record
}

var readmeExprRules = []obj{
	{"id": "sql-select", "when": obj{"tool": []string{"execute_sql"},
		"expr": `args.query.trim().lowerAscii().startsWith("select") && !args.query.contains(";")`}, "decide": "allow"},
	{"id": "nav-local", "when": obj{"tool": []string{"browser_navigate"},
		"expr": `urlHost(args.url) in ["localhost", "127.0.0.1", "::1"]`}, "decide": "allow"},
	{"id": "no-admin", "when": obj{"expr": `session.subject == "intern" && "admin_token" in session.values`}, "decide": "deny",
		"message": "interns do not use the admin token"},
}

// CEL rules decide calls by their arguments, through the binary: the
// allowed call reaches the server, the others are refused before it.
func TestRuleExpressionsDecideCallsByArguments(t *testing.T) {
	cfg, record := exprShop(t, readmeExprRules)
	tests := []struct {
		name, tool, args string
		extra            []string
		code             int
		reaches          bool
	}{
		{"select runs", "execute_sql", `{"query":"  SELECT * FROM orders"}`, nil, 0, true},
		{"delete asks, denied without a terminal", "execute_sql", `{"query":"DELETE FROM orders"}`, nil, 3, false},
		{"two statements ask", "execute_sql", `{"query":"select 1; drop table orders"}`, nil, 3, false},
		{"missing query: the failed allow rule asks", "execute_sql", `{}`, nil, 3, false},
		{"localhost runs", "browser_navigate", `{"url":"http://localhost:3000/"}`, nil, 0, true},
		{"other host asks", "browser_navigate", `{"url":"https://example.com/"}`, nil, 3, false},
		{"user info trick asks", "browser_navigate", `{"url":"http://localhost@example.com/"}`, nil, 3, false},
		{"session names deny", "browser_navigate", `{"url":"http://localhost/"}`, []string{"--subject", "intern", "--bind", "admin_token=s3cr3t-canary"}, 3, false},
		{"same subject without the value runs", "browser_navigate", `{"url":"http://127.0.0.1/"}`, []string{"--subject", "intern"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(withMethod(readRecord(t, record), "tools/call"))
			args := append([]string{"--config", cfg, "call", "db", tt.tool, "--args", tt.args, "--json"}, tt.extra...)
			r := run(t, nil, args...)
			wantCode(t, r, tt.code)
			if tt.code == 3 {
				wantCallError(t, r, 3, "denied")
			}
			wantNoCanary(t, r, "s3cr3t-canary")
			after := len(withMethod(readRecord(t, record), "tools/call"))
			if got := after > before; got != tt.reaches {
				t.Errorf("the call reached the server: %v, want %v\n%s", got, tt.reaches, r)
			}
		})
	}
}

// policy explain shows every expression and its result for --args, and its
// exit code is the decision.
func TestPolicyExplainShowsExpressions(t *testing.T) {
	cfg, _ := exprShop(t, readmeExprRules)

	r := run(t, nil, "--config", cfg, "policy", "explain", "db", "execute_sql", "--args", `{"query":"select 1"}`)
	wantCode(t, r, 0)
	for _, want := range []string{"expressions:", "sql-select: args.query.trim()", "=> true", "nav-local: urlHost(args.url)", "=> not evaluated", "no-admin:", "=> false"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("explain lacks %q\n%s", want, r)
		}
	}

	r = run(t, nil, "--config", cfg, "policy", "explain", "db", "execute_sql", "--args", `{"sql":"select 1"}`, "--json")
	wantCode(t, r, 10)
	var x struct {
		Expressions []struct{ Rule, Expr, Result, Error string } `json:"expressions"`
		Decision    struct {
			Decision   string   `json:"decision"`
			ExprErrors []string `json:"exprErrors"`
		} `json:"decision"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &x); err != nil {
		t.Fatalf("explain --json: %v\n%s", err, r)
	}
	if len(x.Expressions) != 3 || x.Expressions[0].Rule != "sql-select" || x.Expressions[0].Result != "error" ||
		!strings.Contains(x.Expressions[0].Error, "no such key: query") {
		t.Errorf("expressions = %+v, want sql-select failing on the missing query first", x.Expressions)
	}
	if x.Decision.Decision != "ask" || len(x.Decision.ExprErrors) != 1 || !strings.HasPrefix(x.Decision.ExprErrors[0], "sql-select: ") {
		t.Errorf("decision = %+v, want ask naming the failed rule", x.Decision)
	}
}

// An expression that does not compile is a configuration error naming the
// file, the key and the rule (exit 2), before any server starts.
func TestRuleExpressionCompileErrorIsConfigError(t *testing.T) {
	cfg, record := exprShop(t, []obj{
		{"id": "fine", "when": obj{"expr": `tool.name == "execute_sql"`}, "decide": "allow"},
		{"id": "typo", "when": obj{"expr": `tool.nmae == "execute_sql"`}, "decide": "allow"},
	})
	r := run(t, nil, "--config", cfg, "call", "db", "execute_sql", "--args", `{"query":"select 1"}`)
	wantCode(t, r, 2)
	for _, want := range []string{cfg, "approvals.rules[1].when.expr", `rule "typo"`, "undeclared reference"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q\n%s", want, r)
		}
	}
	if recs := readRecord(t, record); len(recs) > 0 {
		t.Errorf("the server was started: %v", methods(recs))
	}
}

// TestToolsNamesRulesThatReadArguments: `tools --json` decides for a call
// without arguments, and names the rules whose expression reads them, so
// an operator knows that a call may be decided otherwise.
func TestToolsNamesRulesThatReadArguments(t *testing.T) {
	cfg, _ := exprShop(t, readmeExprRules)
	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	var rep struct {
		Servers []struct {
			Tools []struct {
				Name          string   `json:"name"`
				Decision      string   `json:"decision"`
				ArgumentRules []string `json:"argumentRules"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Servers) != 1 {
		t.Fatalf("tools --json: %v\n%s", err, r)
	}
	want := map[string]string{"execute_sql": "sql-select", "browser_navigate": "nav-local"}
	for _, tool := range rep.Servers[0].Tools {
		if len(tool.ArgumentRules) != 1 || tool.ArgumentRules[0] != want[tool.Name] {
			t.Errorf("%s: argumentRules %v, want [%s] (no-admin reads session values, not arguments)", tool.Name, tool.ArgumentRules, want[tool.Name])
		}
		delete(want, tool.Name)
	}
	if len(want) > 0 {
		t.Errorf("tools missing from the report: %v", want)
	}
}
