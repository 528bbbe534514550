package llmview

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestExposedNames(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		name  string
		refs  []Ref
		want  map[Ref]string // exact names where deterministic and readable
		plain []Ref          // refs whose name must be the plain server__tool
	}{
		{
			name: "plain names pass through",
			refs: []Ref{{"orders", "execute_sql"}, {"fs", "read-file"}},
			want: map[Ref]string{{"orders", "execute_sql"}: "orders__execute_sql", {"fs", "read-file"}: "fs__read-file"},
		},
		{
			name:  "invalid characters and collisions get a hash",
			refs:  []Ref{{"a.b", "t"}, {"a_b", "t"}, {"srv", "get data"}, {"srv", "get/data"}},
			plain: []Ref{{"a_b", "t"}},
		},
		{
			name: "too long names are shortened with a hash",
			refs: []Ref{{"s", long}, {"s", long + "y"}},
		},
		{
			name: "names differing only in case both get hashes",
			refs: []Ref{{"s", "Get"}, {"s", "get"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ExposedNames(tc.refs)
			seen := map[string]Ref{}
			for _, r := range tc.refs {
				n, ok := got[r]
				if !ok {
					t.Fatalf("no name for %v", r)
				}
				if !validName.MatchString(n) {
					t.Errorf("%v: invalid name %q", r, n)
				}
				if prev, dup := seen[strings.ToLower(n)]; dup {
					t.Errorf("%v and %v share name %q", prev, r, n)
				}
				seen[strings.ToLower(n)] = r
			}
			for r, want := range tc.want {
				if got[r] != want {
					t.Errorf("%v: got %q, want %q", r, got[r], want)
				}
			}
			for _, r := range tc.plain {
				if got[r] != r.Server+"__"+r.Tool {
					t.Errorf("%v: got %q, want plain", r, got[r])
				}
			}
			// Order independence.
			rev := make([]Ref, len(tc.refs))
			for i := range tc.refs {
				rev[i] = tc.refs[len(tc.refs)-1-i]
			}
			again := ExposedNames(rev)
			for r, n := range got {
				if again[r] != n {
					t.Errorf("order changed name of %v: %q vs %q", r, n, again[r])
				}
			}
		})
	}
}

func TestParameters(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"unchanged keeps bytes", `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"$defs":{"x":{}}}`, `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"$defs":{"x":{}}}`},
		{"missing properties", `{"type":"object"}`, `{"properties":{},"type":"object"}`},
		{"null properties", `{"type":"object","properties":null}`, `{"properties":{},"type":"object"}`},
		{"required null dropped", `{"type":"object","properties":{},"required":null}`, `{"properties":{},"type":"object"}`},
		{"missing type", `{"properties":{"a":{}}}`, `{"properties":{"a":{}},"type":"object"}`},
		{"absent", ``, `{"type":"object","properties":{}}`},
		{"null", `null`, `{"type":"object","properties":{}}`},
		{"not an object", `"str"`, `{"type":"object","properties":{}}`},
		{"garbage", `{"type":`, `{"type":"object","properties":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := string(Parameters(json.RawMessage(tc.in)))
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// ParametersOfValid reads only the root's members; for every valid schema
// it must answer exactly as Parameters does.
func TestParametersOfValidAgreesWithParameters(t *testing.T) {
	for _, in := range []string{
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"$defs":{"x":{}}}`,
		`{"type":"object"}`,
		`{"type":"object","properties":null}`,
		`{"type":"object","properties":{},"required":null}`,
		`{"properties":{"a":{}}}`,
		`null`, `"str"`, `{}`, `  {"type" : "object" , "properties" : { } }  `,
		`{"type":"object","properties":{},"properties":null}`,
		`{"type":"object","properties":null,"properties":{}}`,
		`{"type":"object","properties":{"type":{"type":"string"}},"description":"a } brace, a \" quote and a \\"}`,
		`{"typ\u0065":"object","properties":{}}`,
		`{"type":"object","propertie\u0073":null}`,
		`{"type":["object","null"]}`,
		`{"type":"string"}`,
		`{"type":"object","properties":{"a":{"properties":null,"required":null}},"required":[]}`,
		`{"type":"object","properties":{},"required":null,"x":[1,{"y":"]"}]}`,
		`{"type":"object","properties":{},"enum":[true,false,null,-1.5e3]}`,
	} {
		want, got := string(Parameters(json.RawMessage(in))), string(ParametersOfValid(json.RawMessage(in)))
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", in, got, want)
		}
	}
}

func TestBuildMapsBackExplicitly(t *testing.T) {
	tools := []Tool{
		{Ref: Ref{"b", "x.y"}, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)},
		{Ref: Ref{"a", "t"}, Description: "d", InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)},
	}
	v := Build(tools, nil)
	if len(v.Tools()) != 2 {
		t.Fatalf("got %d tools", len(v.Tools()))
	}
	if v.Tools()[0].Name != "a__t" {
		t.Errorf("order: first is %s", v.Tools()[0].Name)
	}
	for _, tool := range v.Tools() {
		ref, ok := v.ByExposed[tool.Name]
		if !ok {
			t.Fatalf("%s not mapped back", tool.Name)
		}
		if v.Exposed[ref] != tool.Name {
			t.Errorf("maps disagree for %v", ref)
		}
	}
	if ref := v.ByExposed[v.Exposed[Ref{"b", "x.y"}]]; ref.Tool != "x.y" {
		t.Errorf("map back lost the raw tool name: %v", ref)
	}
	params, _ := json.Marshal(v.Tools()[0].Parameters)
	if string(params) != `{"type":"object","properties":{"q":{"type":"string"}}}` {
		t.Errorf("parameters: %s", params)
	}
}

func TestComposeLooksUpEveryPart(t *testing.T) {
	a := Build([]Tool{{Ref: Ref{"a", "t"}, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}, nil)
	b := Build([]Tool{{Ref: Ref{"b", "u"}, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)}}, nil)
	v := Compose([]*View{a, b})
	if len(v.Tools()) != 2 || v.Tools()[0].Name != "a__t" || v.Tools()[1].Name != "b__u" {
		t.Fatalf("tools: %+v", v.Tools())
	}
	if r, ok := v.Lookup("b__u"); !ok || r != (Ref{"b", "u"}) {
		t.Errorf("lookup b__u: %v %v", r, ok)
	}
	if _, ok := v.Lookup("c__x"); ok {
		t.Errorf("unknown name found")
	}
	if r, ok := a.Lookup("a__t"); !ok || r.Tool != "t" {
		t.Errorf("lookup on a built view: %v %v", r, ok)
	}
}

// Compose does not copy its parts' functions: it joins them on the first
// Tools call only, and compositions nest.
func TestComposeJoinsOnFirstUse(t *testing.T) {
	build := func(server string, tools ...string) *View {
		var in []Tool
		for _, tool := range tools {
			in = append(in, Tool{Ref: Ref{server, tool}, InputSchema: json.RawMessage(`{"type":"object","properties":{}}`)})
		}
		return Build(in, nil)
	}
	a, b, c := build("a", "y", "x"), build("b"), build("c", "z")
	inner := Compose([]*View{a, b})
	v := Compose([]*View{inner, c})
	if v.Len() != 3 || inner.Len() != 2 || b.Len() != 0 {
		t.Fatalf("Len: %d %d %d", v.Len(), inner.Len(), b.Len())
	}
	if v.flat != nil || inner.flat != nil {
		t.Fatal("Compose joined the functions before they were asked for")
	}
	var names []string
	for _, f := range v.Tools() {
		names = append(names, f.Name)
	}
	if want := []string{"a__x", "a__y", "c__z"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if parts := v.Parts(); len(parts) != 2 || parts[0] != inner || parts[1] != c || a.Parts() != nil {
		t.Errorf("parts: %v", parts)
	}
	if r, ok := v.Lookup("a__y"); !ok || r != (Ref{"a", "y"}) {
		t.Errorf("nested lookup: %v %v", r, ok)
	}
	if empty := Compose(nil); empty.Len() != 0 || len(empty.Tools()) != 0 {
		t.Errorf("empty composition: %d", empty.Len())
	}
	fresh := Compose([]*View{Compose([]*View{a, b}), c})
	var all []string
	for f, r := range fresh.All() {
		all = append(all, f.Name+"="+r.Server+"/"+r.Tool)
	}
	if want := []string{"a__x=a/x", "a__y=a/y", "c__z=c/z"}; !slices.Equal(all, want) {
		t.Errorf("All: %v, want %v", all, want)
	}
	if fresh.flat != nil {
		t.Error("All joined the parts")
	}
	for range fresh.All() {
		break // an early stop ends the walk
	}
}
