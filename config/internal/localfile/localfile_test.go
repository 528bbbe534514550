package localfile

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in, err string
		rules         int
	}{
		{name: "empty", in: ""},
		{name: "one", in: "approvals:\n  always:\n  - server: shop\n    tool: delete_order\n", rules: 1},
		{name: "unknown key", in: "approvals:\n  rules: []\n", err: "not found"},
		{name: "no tool", in: "approvals:\n  always:\n  - server: shop\n", err: "needs a server and a tool"},
		{name: "twice", in: "approvals:\n  always:\n  - {server: s, tool: t}\n  - {server: s, tool: t}\n", err: "listed twice"},
		{name: "not yaml", in: "approvals: [", err: "local settings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Parse([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Approvals.Always) != tt.rules {
				t.Errorf("%d entries, want %d", len(l.Approvals.Always), tt.rules)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte("approvals:\n  always:\n  - server: shop\n    tool: delete_order\n"))
	f.Add([]byte("approvals: {always: [{server: '*', tool: '[a'}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := Parse(data)
		if err != nil {
			return
		}
		for _, e := range l.Approvals.Always {
			r := e.Rule()
			if r.Decide != "allow" || !strings.HasPrefix(r.ID, RulePrefix) || e.Server == "" || e.Tool == "" {
				t.Fatalf("entry %+v loads as rule %+v", e, r)
			}
		}
	})
}

func TestParseLocalYAMLSyntaxErrorLine(t *testing.T) {
	_, err := Parse([]byte("approvals:\n  always: [{server: a, tool: b}\n"))
	if want := "local settings: yaml: line 2: did not find expected ',' or ']'"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
