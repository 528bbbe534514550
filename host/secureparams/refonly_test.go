package secureparams

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/host/secureparams/internal/expansion"
	"github.com/agenthost/agenthost/host/secureparams/internal/schemajson"
)

// refOnlySchemas are schemas around the edge of what refOnlyExpansion
// measures, with whether it answers; they seed FuzzRefOnlyExpansion.
var refOnlySchemas = []struct {
	name    string
	schema  string
	answers bool
}{
	{"no $ref", `{"type":"object","properties":{"a":{"type":"string"}}}`, true},
	{"a property's $defs entry", `{"type":"object","properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"type":"object","properties":{"from":{"type":"string"}}}}}`, true},
	{"a sibling property", `{"type":"object","properties":{"p":{"$ref":"#/properties/q"},"q":{"type":"string"}}}`, true},
	{"an anchor", `{"type":"object","properties":{"p":{"$ref":"#a"}},"$defs":{"d":{"$anchor":"a","type":"string"}}}`, true},
	{"a target that is no schema object", `{"type":"object","properties":{"p":{"$ref":"#/$defs/t"}},"$defs":{"t":true}}`, true},
	{"a $ref with a description", `{"properties":{"p":{"$ref":"#/$defs/t","description":"x"}},"$defs":{"t":{"type":"string"}}}`, true},
	{"a $ref beside required", `{"properties":{"p":{"$ref":"#/$defs/t","required":["a"]}},"$defs":{"t":{"type":"object"}}}`, true},
	{"a $ref beside items", `{"properties":{"p":{"$ref":"#/$defs/t","items":{}}},"$defs":{"t":{"type":"array"}}}`, false},
	{"in items", `{"type":"array","items":{"$ref":"#/$defs/t"},"$defs":{"t":{"type":"object","properties":{"a":{}}}}}`, true},
	{"in prefixItems and items", `{"prefixItems":[{"$ref":"#/$defs/t"}],"items":{"$ref":"#/$defs/t"},"$defs":{"t":{"type":"string"}}}`, true},
	{"in additionalProperties", `{"additionalProperties":{"$ref":"#/$defs/t"},"$defs":{"t":{"items":{"type":"string"}}}}`, true},
	{"only in $defs", `{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, true},
	{"a root $ref", `{"$ref":"#/$defs/t","$defs":{"t":{"type":"object"}}}`, true},
	{"a chain", refChain(3), false},
	{"a cycle through a property", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, false},
	{"a $ref beside properties", `{"properties":{"p":{"$ref":"#/$defs/t","properties":{"a":{}}}},"$defs":{"t":{"properties":{"a":{}}}}}`, false},
	{"a target holding a $ref", `{"properties":{"p":{"$ref":"#/$defs/t"}},"$defs":{"t":{"properties":{"q":{"$ref":"#/$defs/u"}}},"u":{}}}`, false},
	{"a combinator", `{"properties":{"p":{"anyOf":[{"$ref":"#/$defs/t"},{}]}},"$defs":{"t":{}}}`, false},
	{"items and additionalItems", `{"items":{"type":"string"},"additionalItems":{"$ref":"#/$defs/t"},"$defs":{"t":{}}}`, false},
	{"prefixItems and items lists", `{"prefixItems":[{}],"items":[{"$ref":"#/$defs/t"}],"$defs":{"t":{}}}`, false},
	{"an unresolved $ref", `{"properties":{"p":{"$ref":"#/$defs/none"}}}`, false},
	{"a $ref that is not a string", `{"properties":{"p":{"$ref":1}}}`, false},
	{"an escape", `{"properties":{"p":{"\u0024ref":"#/$defs/t"}},"$defs":{"t":{}}}`, false},
}

// expansionBoth measures schema with refOnlyExpansion and with the full
// analysis; ok is false when the text is not a JSON value.
func expansionBoth(schema string) (short int64, answered bool, full int64, p *expansion.Problem, ok bool) {
	if !json.Valid([]byte(schema)) {
		return 0, false, 0, nil, false
	}
	root, err := schemajson.DecodeValid([]byte(schema))
	if err != nil {
		return 0, false, 0, nil, false
	}
	anchors := map[string]string{}
	if scan, sp := scanSchema(json.RawMessage(schema), "inputSchema", new(int(MaxSchemaNodes)), knownValid); sp == nil {
		anchors = scan.anchors
	}
	short, answered = expansion.RefOnly([]byte(schema), root, anchors)
	full, p = expansion.Analyze("inputSchema", []byte(schema), root, anchors)
	return short, answered, full, p, true
}

func TestRefOnlyExpansion(t *testing.T) {
	for _, tc := range refOnlySchemas {
		t.Run(tc.name, func(t *testing.T) {
			short, answered, full, p, ok := expansionBoth(tc.schema)
			if !ok {
				t.Fatal("not JSON")
			}
			if answered != tc.answers {
				t.Fatalf("refOnlyExpansion answered %v, want %v", answered, tc.answers)
			}
			if answered && (p != nil || short != full) {
				t.Fatalf("refOnlyExpansion = %d, the full analysis %d (%v)", short, full, p)
			}
		})
	}
	// The listing benchmarks' realistic definitions take the shortcut.
	var doc struct{ InputSchema json.RawMessage }
	if err := json.Unmarshal(realisticTool, &doc); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc.InputSchema), `"$ref"`) {
		t.Fatal("the realistic tool has no $ref any more: pick another example")
	}
	if short, answered, full, p, _ := expansionBoth(string(doc.InputSchema)); !answered || p != nil || short != full || short != 2 {
		t.Fatalf("realistic inputSchema: shortcut %d (answered %v), full %d (%v)", short, answered, full, p)
	}
}

// FuzzRefOnlyExpansion: wherever refOnlyExpansion answers, the full
// expansion analysis finds the same cost and no problem.
func FuzzRefOnlyExpansion(f *testing.F) {
	for _, tc := range refOnlySchemas {
		f.Add(tc.schema)
	}
	for depth := range []int{1, 2, 3} {
		nested := `{"$ref":"#/$defs/t"}`
		for range depth {
			nested = fmt.Sprintf(`{"type":"object","properties":{"a":%s,"b":{"items":%s}}}`, nested, nested)
		}
		f.Add(strings.TrimSuffix(nested, "}") + `,"$defs":{"t":{"properties":{"x":{}}}}}`)
	}
	f.Fuzz(func(t *testing.T, schema string) {
		short, answered, full, p, ok := expansionBoth(schema)
		if !ok || !answered {
			return
		}
		if p != nil || short != full {
			t.Fatalf("%s: refOnlyExpansion = %d, the full analysis %d (%v)", schema, short, full, p)
		}
	})
}
