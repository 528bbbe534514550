package policyinit

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/agenthost/agenthost/approvals/internal/approvaltest"
	"github.com/agenthost/agenthost/approvals/internal/risktest"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func TestCatalogueRoundTrip(t *testing.T) {
	p := approvaltest.MustPolicy(t, rules.Config{Unclassified: rules.UnclassifiedStrict, ExtraVerbs: map[string][]string{"destroy": {"yeet"}}})
	tools := []risk.ToolInfo{
		{Name: "get_order", Description: "Fetch one order."},
		{Name: "delete_pod", InputSchema: risktest.Schema("namespace", "force")},
		{Name: "yeet_bucket"},
		{Name: "send_invoice"},
		{Name: "weather"},
		{Name: "true"},
		{Name: "get_[weird]*name?"},
		{Name: "drор_all"},
	}
	entries := p.Catalogue("orders", tools)
	var buf bytes.Buffer
	if err := WriteCatalogueYAML(&buf, "orders", entries); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"# agenthost policy catalogue, inferred by infer/v1", `# server: "orders"`, "review every entry",
		"# NOT inferred (no known verb in the tool name)", "# NOT inferred (the tool name contains non-ASCII characters)",
		`# inferred (infer/v1): verb "delete": delete/high; risky flag "force": riskLevel high -> critical; scope parameter "namespace": blastRadius namespace`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The output loads as config, validates, and classifies each tool
	// exactly as inferred, from the catalogue alone.
	var loaded struct {
		Approvals rules.Config `yaml:"approvals"`
	}
	if err := yaml.Unmarshal(buf.Bytes(), &loaded); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if err := loaded.Approvals.Validate(); err != nil {
		t.Fatalf("catalogue does not validate: %v\n%s", err, out)
	}
	if len(loaded.Approvals.Catalogue) != len(tools) {
		t.Fatalf("%d entries, want %d", len(loaded.Approvals.Catalogue), len(tools))
	}
	fromCatalogue := approvaltest.MustPolicy(t, loaded.Approvals)
	for _, tool := range tools {
		got := p.Inferrer().Infer(tool).Complete()
		e := fromCatalogue.Effective("orders", false, risk.ToolInfo{Name: tool.Name})
		wantSource := risk.AllSources(risk.SourceCatalogue)
		if len(got.SideEffects) == 0 {
			wantSource.SideEffects = risk.SourceDefault
		}
		// RawFrom is every field's value (side effects when there are any).
		if diff := cmp.Diff(risk.RawFrom(got), risk.RawFrom(e)); diff != "" {
			t.Errorf("%s (-want +got)\n%s", tool.Name, diff)
		}
		if e.Source != wantSource {
			t.Errorf("%s: sources %+v, want %+v", tool.Name, e.Source, wantSource)
		}
	}
	// Escaped names match only themselves.
	other := fromCatalogue.Effective("orders", false, risk.ToolInfo{Name: "get_w"})
	if other.Source.Category != risk.SourceDefault {
		t.Errorf("escaped glob matched another tool: %+v", other.Source)
	}
}

func TestCatalogueEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteCatalogueYAML(&buf, "", nil); err != nil {
		t.Fatal(err)
	}
	var loaded struct {
		Approvals rules.Config `yaml:"approvals"`
	}
	if err := yaml.Unmarshal(buf.Bytes(), &loaded); err != nil || len(loaded.Approvals.Catalogue) != 0 {
		t.Errorf("empty catalogue: %v\n%s", err, buf.String())
	}
}

func TestExplain(t *testing.T) {
	cfg := approvaltest.ContractConfig()
	cfg.Unclassified = rules.UnclassifiedInfer
	p := approvaltest.MustPolicy(t, cfg)
	tool := risk.ToolInfo{Name: "drop_database", InputSchema: risktest.Schema("name", "force"), Annotations: json.RawMessage(`{"riskLevel":"low"}`)}
	x := p.Explain("db", false, tool, rules.Call{Args: json.RawMessage(`{"name":"prod","force":true}`), TrustLevel: 5})
	if x.Decision.Action != rules.ActionAsk || x.Decision.Approvers != 2 || !x.InferenceUsed || x.Catalogue != nil ||
		x.Effective.RiskLevel != risk.RiskCritical || len(x.Rules) != 1 || x.Rules[0].ID != "deletes" || x.NeverAllowed {
		t.Errorf("explanation %+v", x)
	}
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	json.Unmarshal(b, &m)
	for _, k := range []string{"server", "tool", "trusted", "trustLevel", "unclassified", "declared", "inferred", "inferenceUsed",
		"catalogue", "effective", "notes", "arguments", "rules", "decision", "neverAllowed"} {
		if _, ok := m[k]; !ok {
			t.Errorf("explain JSON lacks %q", k)
		}
	}
	if string(m["declared"]) != `{"riskLevel":"low"}` || !strings.Contains(string(m["decision"]), `"timeout":"10m0s"`) {
		t.Errorf("declared %s decision %s", m["declared"], m["decision"])
	}
	var text bytes.Buffer
	if err := x.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"db / drop_database", "not trusted", `verb "drop": destroy/critical`, `risky flag "force": riskLevel already critical`,
		"declared riskLevel low ignored", "rules:      deletes (ask)", "decision:   ask (2 approver(s), timeout 10m0s)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !regexp.MustCompile(`(?m)^  riskLevel +critical +inferred$`).MatchString(text.String()) {
		t.Errorf("effective table lacks the riskLevel row:\n%s", text.String())
	}

	// Garbage annotations and arguments still explain (as JSON strings).
	x = p.Explain("db", true, risk.ToolInfo{Name: "get_x", Annotations: json.RawMessage(`{oops`)}, rules.Call{Args: json.RawMessage(`nope`), TrustLevel: 1})
	if x.DeclaredError == "" || string(x.Declared) != `"{oops"` || string(x.Arguments) != `"nope"` {
		t.Errorf("garbage: %s %s %q", x.Declared, x.Arguments, x.DeclaredError)
	}
	if _, err := json.Marshal(x); err != nil {
		t.Error(err)
	}
}
