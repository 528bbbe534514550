package bench

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// BenchmarkPolicyExpr times one policy decision whose rule carries a CEL
// expression over the model's arguments (when.expr), the expression
// evaluated and its arguments decoded on every call:
//   - sql_select: the SELECT-only rule of the README;
//   - url_host: the localhost rule of the README;
//   - no_expr: the same decision by a rule without an expression, for
//     comparison.
//
// p50-µs and p99-µs are the latency percentiles over all decisions.
func BenchmarkPolicyExpr(b *testing.B) {
	read := func(v string) *string { return &v }
	cases := []struct {
		name, expr, tool, args string
	}{
		{"sql_select", `args.query.trim().lowerAscii().startsWith("select") && !args.query.contains(";")`, "execute_sql",
			`{"query":"SELECT id, total FROM orders WHERE customer = 'c-42' ORDER BY created DESC LIMIT 20","limit":20}`},
		{"url_host", `urlHost(args.url) in ["localhost", "127.0.0.1", "::1"]`, "browser_navigate",
			`{"url":"http://localhost:3000/orders/42?tab=items","waitUntil":"load"}`},
		{"no_expr", "", "execute_sql", `{"query":"SELECT 1"}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			p, err := rules.NewPolicy(rules.Config{
				Catalogue: []rules.CatalogueEntry{{Server: "*", Tool: "*", Metadata: risk.RawMetadata{
					Category: read("read"), RiskLevel: read("low"), BlastRadius: read("item"), Reversibility: read("auto"),
					ApprovalRecommendation: read("none"), MinTrustLevel: 1}}},
				Rules:   []rules.Rule{{ID: "r", When: rules.Match{Tool: []string{c.tool}, Expr: c.expr}, Decide: "allow"}},
				NoMatch: "ask",
			})
			if err != nil {
				b.Fatal(err)
			}
			risk := p.Effective("db", false, risk.ToolInfo{Name: c.tool})
			call := rules.Call{Server: "db", Tool: c.tool, Args: json.RawMessage(c.args), TrustLevel: 2,
				SessionID: "s-1", Subject: "alice", SessionValues: []string{"project"}}
			latencies := make([]time.Duration, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				began := time.Now()
				d := p.Decide(risk, call)
				latencies = append(latencies, time.Since(began))
				if d.Action != rules.ActionAllow {
					b.Fatalf("decision %s (%s), want allow", d.Action, d.Reason)
				}
			}
			slices.Sort(latencies)
			b.ReportMetric(float64(percentile(latencies, 50).Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(percentile(latencies, 99).Nanoseconds())/1e3, "p99-µs")
		})
	}
}
