package policyinit_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
)

const claudeServers = `{
  "mcpServers": {
    "fs": {"command": "node", "args": ["server.js", "/srv"]},
    "mem": {"command": "node", "args": ["memory.js"]}
  }`

// TestMergeInitJSONIntoApprovals: a JSON config that already has an
// approvals section gets the missing entries appended to its catalogue
// (and the default rules where it has none), keeps its own text, loads,
// carries the review markers JSON has no comments for, and a second run
// adds nothing.
func TestMergeInitJSONIntoApprovals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		approvals string
		entries   int // in the merged catalogue
		rules     int
	}{
		{"no approvals", ``, 6, 3},
		{"approvals without catalogue", `,
  "approvals": {"noMatch": "ask"}`, 6, 3},
		{"approvals empty", `,
  "approvals": {}`, 6, 3},
		{"approvals null", `,
  "approvals": null`, 6, 3},
		{"catalogue and rules empty", `,
  "approvals": {"rules": [], "catalogue": []}`, 6, 3},
		{"an entry and a rule", `,
  "approvals": {
    "rules": [{"id": "mine", "when": {"category": ["read"]}, "decide": "allow"}],
    "catalogue": [
      {"server": "fs", "tool": "list_directory", "metadata": {"category": "read", "riskLevel": "low"}}
    ]
  }`, 6, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := []byte(claudeServers + tc.approvals + "\n}\n")
			cfg := parseJSON(t, data)
			plan := initPlan(t, cfg.Approvals)
			out, added, _, changed, err := policyinit.MergeInitJSON(data, plan)
			if err != nil || !changed || added != len(plan.Entries) {
				t.Fatalf("added %d of %d, changed %v, err %v", added, len(plan.Entries), changed, err)
			}
			if !bytes.HasPrefix(out, []byte(claudeServers)) {
				t.Errorf("the file's own text was not kept:\n%s", out)
			}
			merged := parseJSON(t, out)
			if len(merged.Approvals.Catalogue) != tc.entries || len(merged.Approvals.Rules) != tc.rules {
				t.Fatalf("catalogue %d, rules %d; want %d and %d\n%s", len(merged.Approvals.Catalogue), len(merged.Approvals.Rules), tc.entries, tc.rules, out)
			}
			for _, marker := range []string{rules.ReviewNotInferred, rules.ReviewFromHints} {
				if !strings.Contains(string(out), `"review": "`+marker+`"`) {
					t.Errorf("no %q marker in the JSON\n%s", marker, out)
				}
			}
			again := initPlan(t, merged.Approvals)
			if out2, _, _, changed, err := policyinit.MergeInitJSON(out, again); err != nil || changed || !bytes.Equal(out2, out) {
				t.Errorf("a second run: changed %v, err %v (plan %d entries, %d rules)", changed, err, len(again.Entries), len(again.Rules))
			}
		})
	}
}

func parseJSON(t *testing.T, data []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(data, config.FormatJSON, "agenthost.json")
	if err != nil {
		t.Fatalf("does not load: %v\n%s", err, data)
	}
	return cfg
}
