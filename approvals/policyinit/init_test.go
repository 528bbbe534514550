package policyinit

import (
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/internal/norm"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

// TestClassifyNeverLowersDeclared pins the merge rule of policy init: field
// by field the more restrictive of declared and inferred wins.
func TestClassifyNeverLowersDeclared(t *testing.T) {
	in, err := risk.NewInferrer(nil)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		category, risk, blast, rev, approval string
		trust                                int
		sideEffects                          string
		note                                 string
	}
	cases := []struct {
		name        string
		tool        string
		annotations string
		want        want
	}{
		{"read, nothing declared", "list_files", ``,
			want{"read", "low", "item", "auto", "none", 1, "", `verb "list"`}},
		{"read hint agrees", "read_file", `{"readOnlyHint":true,"openWorldHint":false}`,
			want{"read", "low", "item", "auto", "none", 1, "", "readOnlyHint=true, openWorldHint=false"}},
		{"destructiveHint raises a read verb", "get_and_reset", `{"destructiveHint":true}`,
			want{"mutate", "high", "item", "manual", "single", 1, "", ""}},
		{"destructiveHint raises write to high", "write_file", `{"readOnlyHint":false,"destructiveHint":true}`,
			want{"mutate", "high", "item", "manual", "single", 1, "", "declared riskLevel high kept over inferred medium"}},
		{"readOnlyHint does not lower a write", "write_file", `{"readOnlyHint":true}`,
			want{"mutate", "medium", "item", "manual", "single", 1, "", ""}},
		{"declared low does not lower delete", "delete_user", `{"riskLevel":"low","category":"read"}`,
			want{"delete", "high", "item", "none", "single", 1, "state_loss", ""}},
		{"SEP-2793 fields raise a read", "list_clusters", `{"riskLevel":"critical","blastRadius":"cluster","minTrustLevel":4}`,
			want{"read", "critical", "cluster", "auto", "multi", 4, "", "declared minTrustLevel 4 kept"}},
		{"declared recommendation and reversibility raise", "get_thing", `{"approvalRecommendation":"multi","reversibility":"none"}`,
			want{"read", "low", "item", "none", "multi", 1, "", ""}},
		{"unknown declared value is the most restrictive", "get_thing", `{"category":"bogus"}`,
			want{"destroy", "high", "item", "none", "single", 1, "", "declared category destroy kept over inferred read"}},
		{"declared side effects add", "delete_user", `{"sideEffects":["cost"]}`,
			want{"delete", "high", "item", "none", "single", 1, "cost,state_loss", ""}},
		{"invalid declared trust is 5", "get_thing", `{"minTrustLevel":"3"}`,
			want{"read", "low", "item", "auto", "none", 5, "", ""}},
		{"annotations not an object are ignored", "get_thing", `[1]`,
			want{"read", "low", "item", "auto", "none", 1, "", "declared annotations ignored"}},
		// Not inferred: the fail-closed risk, offered and asked rather than
		// hidden (trust 1, one approver), never below a declaration.
		{"not inferred: fail-closed risk, asked", "frobnicate", ``,
			want{"destroy", "critical", "global", "none", "single", 1, "", "could not infer: no known verb in the tool name — review"}},
		// No known verb, but the server's hints say what the tool is: the
		// suggestion is the hint's reading, marked for review.
		{"not inferred: readOnlyHint suggests a read", "directory_tree", `{"readOnlyHint":true}`,
			want{"read", "low", "item", "auto", "none", 1, "", "from the server's hints: review: no known verb in the tool name; server hints readOnlyHint=true"}},
		{"not inferred: destructiveHint suggests a write", "frobnicate", `{"destructiveHint":true}`,
			want{"mutate", "high", "item", "manual", "single", 1, "", "from the server's hints: review"}},
		{"not inferred: declared SEP-2793 fields suggest", "open_nodes", `{"category":"read","riskLevel":"medium","blastRadius":"cluster"}`,
			want{"read", "medium", "cluster", "auto", "single", 1, "", "from the server's hints: review"}},
		{"not inferred keeps declared side effects", "frobnicate", `{"sideEffects":["cost"]}`,
			want{"destroy", "critical", "global", "none", "single", 1, "cost", "could not infer"}},
		{"not inferred keeps a declared quorum and trust level", "frobnicate", `{"approvalRecommendation":"multi","minTrustLevel":4}`,
			want{"destroy", "critical", "global", "none", "multi", 4, "", "could not infer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := classify(in, "srv", risk.ToolInfo{Name: tc.tool, Annotations: []byte(tc.annotations)})
			m := e.Metadata
			got := want{*m.Category, *m.RiskLevel, *m.BlastRadius, *m.Reversibility, *m.ApprovalRecommendation,
				m.MinTrustLevel.(int), strings.Join(m.SideEffects, ","), ""}
			w := tc.want
			w.note = ""
			if got != w {
				t.Errorf("got %+v\nwant %+v", got, w)
			}
			if !strings.Contains(e.Note, tc.want.note) {
				t.Errorf("note %q does not contain %q", e.Note, tc.want.note)
			}
			if e.Server != "srv" || e.Tool != tc.tool {
				t.Errorf("entry names %q/%q", e.Server, e.Tool)
			}
			// Never below a declaration: the entry, read as a catalogue
			// entry, is at least as restrictive as the declaration alone
			// for an untrusted server under strict (every field).
			decl, _ := risk.ParseAnnotations([]byte(tc.annotations))
			dv := (&rules.Merger{}).DeclaredView(decl)
			check := func(name string, order []string, declared *string, got string) {
				if declared != nil && norm.Rank(order, string(norm.NormEnum(order, *declared))) > norm.Rank(order, got) {
					t.Errorf("%s %s is below the declared %s", name, got, *declared)
				}
			}
			check("category", enumStrings(risk.CategoryOrder), dv.Category, got.category)
			check("riskLevel", enumStrings(risk.RiskOrder), dv.RiskLevel, got.risk)
			check("blastRadius", enumStrings(risk.BlastOrder), dv.BlastRadius, got.blast)
			check("reversibility", enumStrings(risk.ReversibilityOrder), dv.Reversibility, got.rev)
			check("approvalRecommendation", enumStrings(risk.ApprovalOrder), dv.ApprovalRecommendation, got.approval)
			if dv.MinTrustLevel != nil {
				if d, _ := risk.NormalizeTrust(dv.MinTrustLevel); d > got.trust {
					t.Errorf("minTrustLevel %d below the declared %d", got.trust, d)
				}
			}
		})
	}
}

// TestClassifyNotBelowInferred: for tools without declarations the entry
// has the inferred category, risk and blast radius (after floors).
func TestClassifyNotBelowInferred(t *testing.T) {
	in, _ := risk.NewInferrer(map[string][]string{"destroy": {"yeet"}})
	for _, name := range []string{"get_order", "delete_pod", "yeet_bucket", "send_invoice", "export_db", "run_script"} {
		tool := risk.ToolInfo{Name: name, InputSchema: risktest.Schema("namespace", "force")}
		inf := in.Infer(tool).Complete()
		e := classify(in, "s", tool).Metadata
		if *e.Category != string(inf.Category) || *e.RiskLevel != string(inf.RiskLevel) || *e.BlastRadius != string(inf.BlastRadius) ||
			*e.Reversibility != string(inf.Reversibility) || *e.ApprovalRecommendation != string(inf.ApprovalRecommendation) {
			t.Errorf("%s: entry %s/%s/%s/%s/%s, inference %s/%s/%s/%s/%s", name, *e.Category, *e.RiskLevel, *e.BlastRadius, *e.Reversibility, *e.ApprovalRecommendation,
				inf.Category, inf.RiskLevel, inf.BlastRadius, inf.Reversibility, inf.ApprovalRecommendation)
		}
	}
}

func TestPlanInit(t *testing.T) {
	in, _ := risk.NewInferrer(nil)
	servers := []InitServer{
		{Name: "fs", Tools: []risk.ToolInfo{{Name: "read_file"}, {Name: "write_file"}, {Name: "directory_tree"}}},
		{Name: "db*", Tools: []risk.ToolInfo{{Name: "drop_table"}, {Name: "query"}, {Name: "query"}}},
	}
	cases := []struct {
		name    string
		cfg     rules.Config
		want    []string
		rules   bool
		present int
	}{
		{"empty config", rules.Config{}, []string{`fs/read_file`, `fs/write_file`, `fs/directory_tree`, `db\*/drop_table`, `db\*/query`}, true, 1}, // a name listed twice counts once
		{"entries present and rules", rules.Config{
			Catalogue: []rules.CatalogueEntry{{Server: "fs", Tool: "write_file"}, {Server: `db\*`, Tool: "query"}, {Server: "fs", Tool: "*"}},
			Rules:     []rules.Rule{{ID: "r", Decide: "allow"}},
		}, []string{`fs/read_file`, `fs/directory_tree`, `db\*/drop_table`}, false, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan := PlanInit(in, servers, tc.cfg)
			var got []string
			for _, e := range plan.Entries {
				got = append(got, e.Server+"/"+e.Tool)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("entries %v, want %v", got, tc.want)
			}
			if (len(plan.Rules) > 0) != tc.rules || plan.Present != tc.present {
				t.Errorf("rules %v present %d, want rules %v present %d", plan.Rules, plan.Present, tc.rules, tc.present)
			}
		})
	}
}
