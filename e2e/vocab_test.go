package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Tool Annotations working group's vocabularies through the binary: a
// tool's action-metadata is in `tools --json` and `policy explain` with its
// source, and a result the server labels untrusted comes back from `call`
// labelled, and is labelled in its audit record.
func TestVocabulariesThroughTheCLI(t *testing.T) {
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "get_report", "inputSchema": obj{"type": "object"},
			"annotations": obj{"io.modelcontextprotocol/action-metadata": obj{"outcome": "irreversible"}}},
		{"name": "read_article", "inputSchema": obj{"type": "object"},
			"x-test": obj{"content": []obj{{"type": "text", "text": "page",
				"_meta": obj{"io.modelcontextprotocol/trust-annotations": obj{"untrusted": true}}}}}},
	})
	audit := filepath.Join(dir, "audit.jsonl")
	cfg := writeConfig(t, obj{"mcpServers": obj{"web": stdioServer(tools, "")},
		"approvals": obj{"unclassified": "infer", "noMatch": "allow"},
		"audit":     obj{"path": audit}})

	r := run(t, nil, "--config", cfg, "tools", "--json")
	wantCode(t, r, 0)
	var doc struct {
		Servers []struct {
			Tools []struct {
				Name string `json:"name"`
				Risk struct {
					RiskLevel string            `json:"riskLevel"`
					Source    map[string]string `json:"source"`
				} `json:"risk"`
			} `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || len(doc.Servers) != 1 {
		t.Fatalf("tools --json: %v\n%s", err, r)
	}
	found := false
	for _, tool := range doc.Servers[0].Tools {
		if tool.Name == "get_report" {
			found = true
			if tool.Risk.RiskLevel != "high" || tool.Risk.Source["riskLevel"] != "action-metadata" {
				t.Errorf("get_report risk %+v", tool.Risk)
			}
		}
	}
	if !found {
		t.Fatalf("get_report not listed\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "tools")
	if !strings.Contains(r.stdout, "from action-metadata: riskLevel high; reversibility none") {
		t.Errorf("tools text has no action-metadata line\n%s", r)
	}

	r = run(t, nil, "--config", cfg, "policy", "explain", "web", "get_report")
	if !strings.Contains(r.stdout, `action-metadata: {"annotations":{"outcome":"irreversible"}}`) ||
		!strings.Contains(r.stdout, "action-metadata riskLevel high raises the inferred low") {
		t.Errorf("policy explain\n%s", r)
	}

	r = run(t, nil, "--config", cfg, "call", "web", "read_article", "--json")
	wantCode(t, r, 0)
	if !strings.Contains(r.stdout, `"labels": [`) || !strings.Contains(r.stdout, `"source": "trust-annotations"`) {
		t.Errorf("call --json has no labels\n%s", r)
	}
	r = run(t, nil, "--config", cfg, "call", "web", "read_article")
	if !strings.Contains(r.stderr, "the result is labelled untrusted (trust-annotations)") {
		t.Errorf("call does not say the label\n%s", r)
	}
	b, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"resultLabels":[{"label":"untrusted","source":"trust-annotations"}]`) {
		t.Errorf("audit has no result labels:\n%s", b)
	}
}
