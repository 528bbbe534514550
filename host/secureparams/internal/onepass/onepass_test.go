package onepass

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

var limits = Limits{MaxJSONDepth: 128, MaxSchemaDepth: 32, MaxNodes: 5000, MaxArgumentDepth: 64, MaxSchemaText: 256 << 10}

// TestScan pins what the pass learns from the shapes it answers for, and
// that it declines the others (the full analysis's comparison is
// secureparams' FuzzSinglePass). Each case runs twice, the second time on
// a pass reused from the pool.
func TestScan(t *testing.T) {
	tests := []struct {
		name, def string
		names     []string // nil: the pass declines
		cost      int64
	}{
		{"names at any depth", `{"name":"t","inputSchema":{"properties":{"a":{"items":{"properties":{"b":{}}}}},"required":["a","x"],"dependentRequired":{"c":["d"]}}}`, []string{"a", "b", "a", "x", "c", "d"}, 1},
		{"a $ref to a $defs entry", `{"name":"t","inputSchema":{"properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"properties":{"f":{}}}}}}`, []string{"r", "f"}, 2},
		{"a $ref to a boolean entry", `{"inputSchema":{"properties":{"r":{"$ref":"#/definitions/R"}},"definitions":{"R":true}}}`, []string{"r"}, 1},
		{"names in data do not count", `{"inputSchema":{"default":{"properties":{"x":1}},"enum":[{"required":["y"]}]}}`, []string{}, 1},
		{"no inputSchema", `{"name":"t","title":"x"}`, []string{}, 1},
		{"duplicate key outside the schema", `{"name":"t","_meta":{"a":1,"a":2},"inputSchema":{}}`, nil, 0},
		{"a $ref to a $ref", `{"inputSchema":{"properties":{"r":{"$ref":"#/$defs/R"}},"$defs":{"R":{"$ref":"#/$defs/S"},"S":{}}}}`, nil, 0},
		{"a missing target", `{"inputSchema":{"properties":{"r":{"$ref":"#/$defs/R"}}}}`, nil, 0},
		{"a $ref beside properties", `{"inputSchema":{"properties":{"r":{"$ref":"#/$defs/R","properties":{}}},"$defs":{"R":{}}}}`, nil, 0},
		{"fan-out", `{"inputSchema":{"anyOf":[{}]}}`, nil, 0},
		{"a property named like a keyword", `{"inputSchema":{"properties":{"not":{}}}}`, nil, 0},
		{"a header annotation", `{"inputSchema":{"properties":{"a":{"x-mcp-header":"A"}}}}`, nil, 0},
		{"a number the validator cannot hold", `{"inputSchema":{"maximum":1e999999999}}`, nil, 0},
		{"a schema that is not one", `{"inputSchema":{"properties":{"a":"x"}}}`, nil, 0},
		{"inputSchema not an object", `{"inputSchema":[]}`, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for range 2 {
				facts := Scan([]byte(tt.def), limits)
				if tt.names == nil {
					if facts != nil {
						t.Fatalf("the pass answered: %+v", facts)
					}
					continue
				}
				if facts == nil {
					t.Fatal("the pass declined")
				}
				if diff := cmp.Diff(tt.names, append([]string{}, facts.Names...)); diff != "" || facts.Cost != tt.cost {
					t.Fatalf("cost %d, want %d; names (-want +got):\n%s", facts.Cost, tt.cost, diff)
				}
				facts.Release()
			}
		})
	}
}

// A released pass keeps nothing of the definition it read: every frame,
// key, name, field and $ref holder it wrote is cleared before it goes back
// to the pool.
func TestReleaseClearsTheDefinition(t *testing.T) {
	def := `{"name":"t","_meta":{"k":[{"a":1}]},"inputSchema":{"properties":{"r":{"$ref":"#/$defs/R"},"s":{"items":{"properties":{"deep":{}}}}},"required":["r"],"$defs":{"R":{"properties":{"f":{}}}}}}`
	facts := Scan([]byte(def), limits)
	if facts == nil {
		t.Fatal("the pass declined")
	}
	p := facts.owner
	facts.Release()
	for i, f := range p.stack[:cap(p.stack)] {
		if f.large != nil || f.key != "" || f.ref != (defsKey{}) || f.entry != (defsKey{}) || f.defsKeyword != "" || f.role != 0 {
			t.Errorf("frame %d kept: %+v", i, f)
		}
	}
	for i, k := range p.keys[:cap(p.keys)] {
		if k != "" {
			t.Errorf("key %d kept: %q", i, k)
		}
	}
	for i, h := range p.holders[:cap(p.holders)] {
		if h != (holder{}) {
			t.Errorf("holder %d kept: %+v", i, h)
		}
	}
	for i, n := range p.facts.Names[:cap(p.facts.Names)] {
		if n != "" {
			t.Errorf("name %d kept: %q", i, n)
		}
	}
	for i, m := range p.facts.Fields[:cap(p.facts.Fields)] {
		if m.Key != "" || m.Value != nil {
			t.Errorf("field %d kept: %+v", i, m)
		}
	}
	if len(p.entries) != 0 || p.facts.Type != nil {
		t.Errorf("entries %v, type %s kept", p.entries, p.facts.Type)
	}
}

// TestCheckedMemberIsSkipped: a member the caller reports checked is not
// read (a repeated key inside it no longer declines) and keeps its place
// and bytes in Fields.
func TestCheckedMemberIsSkipped(t *testing.T) {
	def := []byte(`{"name":"t","secureInputSchema":{"a":1,"a":2},"inputSchema":{"type":"object"},"x":[1]}`)
	if f := Scan(def, limits); f != nil {
		f.Release()
		t.Fatal("a repeated key in an unchecked member did not decline")
	}
	lim := limits
	var asked []string
	lim.CheckedMember = "secureInputSchema"
	lim.Checked = func(value []byte) bool {
		asked = append(asked, string(value))
		return string(value) == `{"a":1,"a":2}`
	}
	f := Scan(def, lim)
	if f == nil {
		t.Fatal("the pass read a checked member")
	}
	defer f.Release()
	var got []string
	for _, m := range f.Fields {
		got = append(got, m.Key+"="+string(m.Value))
	}
	want := []string{`name="t"`, `secureInputSchema={"a":1,"a":2}`, `inputSchema={"type":"object"}`, `x=[1]`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Fields (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`{"a":1,"a":2}`}, asked); diff != "" {
		t.Fatalf("asked about (-want +got):\n%s", diff)
	}
}
