package policyinit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/approvals/policyinit"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
)

const initBase = `# my agenthost config
mcpServers:
  fs:   # the filesystem
    command: node
    args: ["server.js", "/srv"]
  mem:
    command: node
    args: ["memory.js"]
audit:
  path: audit.jsonl # keep this
`

func initPlan(t *testing.T, cfg rules.Config) policyinit.InitPlan {
	t.Helper()
	in, err := risk.NewInferrer(nil)
	if err != nil {
		t.Fatal(err)
	}
	return policyinit.PlanInit(in, []policyinit.InitServer{
		{Name: "fs", Tools: []risk.ToolInfo{
			{Name: "list_directory", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
			{Name: "write_file", Annotations: json.RawMessage(`{"destructiveHint":true}`)},
			{Name: "directory_tree", Annotations: json.RawMessage(`{"readOnlyHint":true}`)},
		}},
		{Name: "mem", Tools: []risk.ToolInfo{{Name: "delete_entities"}, {Name: "read_graph"}, {Name: "zorp_nodes"}}},
	}, cfg)
}

func parseConfig(t *testing.T, data []byte) *config.Config {
	t.Helper()
	cfg, err := config.Parse(data, "yaml", "agenthost.yaml")
	if err != nil {
		t.Fatalf("the result does not load: %v\n%s", err, data)
	}
	return cfg
}

// decide is the decision for a call at the default trust level.
func decide(t *testing.T, cfg *config.Config, server, tool, annotations string) rules.Action {
	t.Helper()
	p, err := rules.NewPolicy(cfg.Approvals)
	if err != nil {
		t.Fatal(err)
	}
	eff := p.Effective(server, false, risk.ToolInfo{Name: tool, Annotations: json.RawMessage(annotations)})
	return p.Decide(eff, rules.Call{Server: server, Tool: tool, Args: json.RawMessage(`{}`), TrustLevel: 1}).Action
}

// TestWriteInitYAML: one approvals block with one catalogue for every
// server, the default rules, comments on every entry; merged into a config
// without approvals it loads, and reads run while writes ask.
func TestWriteInitYAML(t *testing.T) {
	plan := initPlan(t, rules.Config{})
	var out bytes.Buffer
	if err := policyinit.WriteInitYAML(&out, plan); err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	if len(root.Content) != 2 || root.Content[0].Value != "approvals" {
		t.Fatalf("want exactly one top-level key approvals\n%s", out.String())
	}
	if n := strings.Count(out.String(), "catalogue:"); n != 1 {
		t.Errorf("%d catalogue keys, want 1\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "# could not infer: no known verb in the tool name — review") {
		t.Errorf("zorp_nodes is not marked\n%s", out.String())
	}
	if n := strings.Count(out.String(), "# could not infer"); n != 1 {
		t.Errorf("%d entries marked as not inferred, want 1", n)
	}
	// No known verb, but the server's readOnlyHint says what the tool is:
	// the suggestion follows the hint, marked for review.
	if !strings.Contains(out.String(), "# from the server's hints: review: no known verb in the tool name; server hints readOnlyHint=true") {
		t.Errorf("directory_tree is not suggested from its hints\n%s", out.String())
	}

	cfg := parseConfig(t, append([]byte(initBase), out.Bytes()...))
	if len(cfg.Approvals.Catalogue) != 6 || len(cfg.Approvals.Rules) != 3 {
		t.Fatalf("catalogue %d entries, rules %d; want 6 and 3", len(cfg.Approvals.Catalogue), len(cfg.Approvals.Rules))
	}
	servers := map[string]int{}
	for _, e := range cfg.Approvals.Catalogue {
		servers[e.Server]++
	}
	if servers["fs"] != 3 || servers["mem"] != 3 {
		t.Errorf("entries per server %v", servers)
	}
	for _, tc := range []struct {
		server, tool, annotations string
		want                      rules.Action
	}{
		{"fs", "list_directory", `{"readOnlyHint":true}`, rules.ActionAllow},
		{"mem", "read_graph", ``, rules.ActionAllow},
		{"fs", "write_file", `{"destructiveHint":true}`, rules.ActionAsk},
		{"mem", "delete_entities", ``, rules.ActionAsk},
		{"fs", "directory_tree", `{"readOnlyHint":true}`, rules.ActionAllow}, // from its hints, once the entry is written
		{"mem", "zorp_nodes", ``, rules.ActionAsk},                           // not inferred: fail-closed risk, asked
	} {
		if got := decide(t, cfg, tc.server, tc.tool, tc.annotations); got != tc.want {
			t.Errorf("%s/%s: %s, want %s", tc.server, tc.tool, got, tc.want)
		}
	}
}

// TestWriteInitEntries: --entries is a bare list that, pasted under an
// existing catalogue: at its indentation, loads.
func TestWriteInitEntries(t *testing.T) {
	plan := initPlan(t, rules.Config{})
	var out bytes.Buffer
	if err := policyinit.WriteInitEntries(&out, plan, 4); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "approvals:") || strings.Contains(out.String(), "rules:") {
		t.Errorf("--entries prints more than entries\n%s", out.String())
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !strings.HasPrefix(l, "    ") {
			t.Errorf("line %q not indented by 4", l)
		}
	}
	existing := initBase + "approvals:\n  noMatch: ask\n  catalogue:\n    - server: other\n      tool: x\n      metadata: {category: read, riskLevel: low}\n"
	cfg := parseConfig(t, []byte(existing+out.String()))
	if len(cfg.Approvals.Catalogue) != 7 {
		t.Errorf("%d entries after pasting, want 7", len(cfg.Approvals.Catalogue))
	}
	out.Reset()
	if err := policyinit.WriteInitEntries(&out, policyinit.InitPlan{}, 4); err != nil || out.Len() != 0 {
		t.Errorf("no entries printed %q (%v)", out.String(), err)
	}
}

// TestMergeInitYAML: --write keeps comments and unrelated keys, appends
// only missing entries, adds rules only when there are none, and is
// idempotent.
func TestMergeInitYAML(t *testing.T) {
	withApprovals := initBase + `approvals:
  # approvals comment
  noMatch: ask # line comment
  timeout: 2m
  rules:
    - id: mine
      when: {category: [read]}
      decide: allow
  catalogue:
    # hand-written
    - server: fs
      tool: write_file
      metadata: {category: mutate, riskLevel: low, minTrustLevel: 1}
session:
  trustLevel: 1 # session comment
`
	cases := []struct {
		name       string
		in         string
		added      int
		rules      bool
		prefixSame bool
		keep       []string
	}{
		{"no approvals: appended", initBase, 6, true, true, nil},
		{"empty file", "", 6, true, true, nil},
		{"comments only", "# nothing yet\n", 6, true, true, nil},
		{"no trailing newline", strings.TrimSuffix(initBase, "\n"), 6, true, true, nil},
		{"approvals with rules and an entry", withApprovals, 5, false, false,
			[]string{"# my agenthost config", "# the filesystem", "# keep this", "# approvals comment", "# line comment", "# hand-written", "timeout: 2m", "id: mine", "riskLevel: low, minTrustLevel: 1", "trustLevel: 1 # session comment"}},
		{"approvals null", initBase + "approvals:\n", 6, true, false, []string{"# keep this"}},
		{"catalogue empty flow, rules empty", initBase + "approvals:\n  rules: []\n  catalogue: []\n", 6, true, false, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := initPlan(t, rules.Config{})
			out, added, rulesAdded, changed, err := policyinit.MergeInitYAML([]byte(tc.in), plan)
			if err != nil {
				t.Fatal(err)
			}
			if !changed || added != tc.added || rulesAdded != tc.rules {
				t.Errorf("changed %v added %d rules %v, want true %d %v", changed, added, rulesAdded, tc.added, tc.rules)
			}
			if tc.prefixSame && !bytes.HasPrefix(out, []byte(strings.TrimSuffix(tc.in, "\n"))) {
				t.Errorf("the original text is not kept byte for byte\n%s", out)
			}
			for _, k := range tc.keep {
				if !bytes.Contains(out, []byte(k)) {
					t.Errorf("lost %q\n%s", k, out)
				}
			}
			cfg := parseConfig(t, out)
			if n := bytes.Count(out, []byte("\napprovals:")); n > 1 {
				t.Errorf("%d approvals blocks", n)
			}
			if tc.in == withApprovals {
				if len(cfg.Approvals.Rules) != 1 || cfg.Approvals.Catalogue[0].Metadata.RiskLevel == nil || *cfg.Approvals.Catalogue[0].Metadata.RiskLevel != "low" {
					t.Errorf("the existing rules or entry changed: %+v", cfg.Approvals)
				}
				if cfg.Approvals.Timeout.String() != "2m0s" || cfg.Audit.Path == "" || cfg.Session.TrustLevel != 1 {
					t.Errorf("unrelated keys changed")
				}
			}
			if len(tc.in) > 0 && bytes.Contains([]byte(tc.in), []byte("mcpServers")) && len(cfg.MCPServers) != 2 {
				t.Errorf("servers lost: %v", cfg.MCPServers)
			}

			// Running again (with the plan the new config gives) adds
			// nothing and leaves the bytes alone.
			again, added, rulesAdded, changed, err := policyinit.MergeInitYAML(out, initPlan(t, cfg.Approvals))
			if err != nil || changed || added != 0 || rulesAdded || !bytes.Equal(again, out) {
				t.Errorf("second run: changed %v added %d rules %v err %v", changed, added, rulesAdded, err)
			}
			// Even with a plan that still proposes everything.
			again, added, _, changed, err = policyinit.MergeInitYAML(out, plan)
			if err != nil || changed || added != 0 || !bytes.Equal(again, out) {
				t.Errorf("second run with the full plan: changed %v added %d err %v", changed, added, err)
			}
		})
	}
}

func TestMergeInitYAMLRefuses(t *testing.T) {
	for _, in := range []string{
		"a: 1\n---\nb: 2\n",
		"- a\n- b\n",
		"approvals: yes\n",
		"approvals:\n  catalogue: {a: 1}\n",
		"a: [\n",
	} {
		_, _, _, _, err := policyinit.MergeInitYAML([]byte(in), initPlan(t, rules.Config{}))
		if !errors.Is(err, policyinit.ErrInitEdit) {
			t.Errorf("%q: err %v, want ErrInitEdit", in, err)
		}
	}
}

// FuzzMergeInitYAML: any input either fails with ErrInitEdit or gives YAML
// that a second merge leaves unchanged; never a panic.
func FuzzMergeInitYAML(f *testing.F) {
	for _, s := range []string{"", "# c\n", initBase, "approvals:\n", "approvals:\n  catalogue: []\n", "approvals:\n  rules:\n    - id: x\n      decide: allow\n",
		"a: &x {b: 1}\nc: *x\n", "approvals: {catalogue: [{server: fs, tool: write_file}]}\n", "approvals: yes\n", "- 1\n"} {
		f.Add([]byte(s))
	}
	in, err := risk.NewInferrer(nil)
	if err != nil {
		f.Fatal(err)
	}
	plan := policyinit.PlanInit(in, []policyinit.InitServer{{Name: "fs", Tools: []risk.ToolInfo{{Name: "write_file"}, {Name: "x*y"}}}}, rules.Config{})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, _, _, changed, err := policyinit.MergeInitYAML(data, plan)
		if err != nil {
			if !errors.Is(err, policyinit.ErrInitEdit) {
				t.Fatalf("error %v is not ErrInitEdit", err)
			}
			return
		}
		if !changed {
			return
		}
		var n yaml.Node
		if err := yaml.Unmarshal(out, &n); err != nil {
			t.Fatalf("output is not YAML: %v\n%s", err, out)
		}
		again, _, _, changed, err := policyinit.MergeInitYAML(out, plan)
		if err != nil || changed || !bytes.Equal(again, out) {
			t.Fatalf("second merge changed %v err %v\n%s", changed, err, out)
		}
	})
}
