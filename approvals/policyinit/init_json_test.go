package policyinit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
)

func TestMergeInitJSON(t *testing.T) {
	s := func(v string) *string { return &v }
	plan := InitPlan{
		Entries: []rules.CatalogueEntry{{Server: "fs", Tool: "list_directory", Metadata: risk.RawMetadata{Category: s("read"), RiskLevel: s("low"), MinTrustLevel: 1}}},
		Rules:   defaultRules(),
	}
	claude := []byte("{\n  \"mcpServers\": {\n    \"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"srv\"]}\n  }\n}\n")
	out, added, rulesAdded, changed, err := MergeInitJSON(claude, plan)
	if err != nil || !changed || added != 1 || !rulesAdded {
		t.Fatalf("added %d, rules %v, changed %v, err %v", added, rulesAdded, changed, err)
	}
	if !bytes.HasPrefix(out, bytes.TrimRight(claude[:bytes.LastIndexByte(claude, '}')], " \n")) {
		t.Errorf("the original text was not kept:\n%s", out)
	}
	var doc struct {
		MCPServers map[string]any `json:"mcpServers"`
		Approvals  rules.Config   `json:"approvals"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("the result is not JSON: %v\n%s", err, out)
	}
	if len(doc.MCPServers) != 1 || len(doc.Approvals.Catalogue) != 1 || len(doc.Approvals.Rules) != len(defaultRules()) {
		t.Errorf("the merged document: %+v", doc)
	}
	if err := doc.Approvals.Validate(); err != nil {
		t.Errorf("the merged approvals do not validate: %v", err)
	}
	if strings.Contains(string(out), "null") {
		t.Errorf("empty fields were written as null:\n%s", out)
	}

	// An empty object, and one that already has approvals.
	if out, _, _, _, err := MergeInitJSON([]byte("{}"), plan); err != nil || json.Unmarshal(out, &doc) != nil {
		t.Errorf("empty object: %v\n%s", err, out)
	}
	if _, _, _, _, err := MergeInitJSON([]byte(`{"approvals": {"catalogue": {}}}`), plan); !errors.Is(err, ErrInitEdit) {
		t.Errorf("a catalogue that is not a list: %v, want ErrInitEdit", err)
	}
	if _, _, _, _, err := MergeInitJSON([]byte(`{"approvals": 3}`), plan); !errors.Is(err, ErrInitEdit) {
		t.Errorf("approvals not an object: %v, want ErrInitEdit", err)
	}
	if _, _, _, _, err := MergeInitJSON([]byte(`[1]`), plan); !errors.Is(err, ErrInitEdit) {
		t.Errorf("not an object: %v, want ErrInitEdit", err)
	}
	if _, _, _, changed, _ := MergeInitJSON(claude, InitPlan{}); changed {
		t.Error("an empty plan changed the file")
	}
}

func TestWriteInitJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteInitJSON(&b, InitPlan{Rules: defaultRules()}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Approvals rules.Config `json:"approvals"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil || len(doc.Approvals.Rules) != 3 {
		t.Fatalf("%v\n%s", err, b.String())
	}
}
