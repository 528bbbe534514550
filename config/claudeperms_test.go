package config

import (
	"slices"
	"strings"
	"testing"
)

func TestSplitToolList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"mcp__a__b", []string{"mcp__a__b"}},
		{"mcp__a__b,mcp__c", []string{"mcp__a__b", "mcp__c"}},
		{" mcp__a__b  mcp__c ,, ", []string{"mcp__a__b", "mcp__c"}},
		{"Bash(git log:*) Edit", []string{"Bash(git log:*)", "Edit"}},
		{"Bash(a, b),mcp__x", []string{"Bash(a, b)", "mcp__x"}},
		{"", nil},
	}
	for _, tc := range tests {
		if got := SplitToolList(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("SplitToolList(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseToolPattern(t *testing.T) {
	tests := []struct {
		in, server, tool string
		ok               bool
	}{
		{"mcp__github__create_issue", "github", "create_issue", true},
		{"mcp__github", "github", "*", true},
		{"mcp__github__*", "github", "*", true},
		{"mcp__db__drop__all", "db", "drop__all", true},
		{"Bash(ls)", "", "", false},
		{"Read", "", "", false},
		{"mcp__", "", "", false},
		{"mcp____tool", "", "", false},
		{"mcp__x__Bash(ls)", "", "", false},
	}
	for _, tc := range tests {
		server, tool, ok := ParseToolPattern(tc.in)
		if server != tc.server || tool != tc.tool || ok != tc.ok {
			t.Errorf("ParseToolPattern(%q) = %q, %q, %v; want %q, %q, %v", tc.in, server, tool, ok, tc.server, tc.tool, tc.ok)
		}
	}
}

// The lists become rules, deny first, each named by its list and index;
// what names no MCP tool is returned.
func TestPermissionRules(t *testing.T) {
	rules, ignored := PermissionRules("permissions", PermissionLists{
		Allow: []string{"mcp__srv", "Read"},
		Ask:   []string{"mcp__srv__write"},
		Deny:  []string{"Bash(rm:*)", "mcp__srv__drop"},
	})
	var got []string
	for _, r := range rules {
		got = append(got, r.ID+" "+r.Decide+" "+strings.Join(r.When.Server, ",")+"/"+strings.Join(r.When.Tool, ","))
	}
	want := []string{"permissions/deny[1] deny srv/drop", "permissions/ask[0] ask srv/write", "permissions/allow[0] allow srv/*"}
	if !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
	if !slices.Equal(ignored, []string{"Bash(rm:*)", "Read"}) {
		t.Errorf("ignored %q", ignored)
	}
}

// A settings.json with permissions loads them as approvals rules that
// validate; an unknown list is refused like any unknown key.
func TestParsePermissions(t *testing.T) {
	cfg, err := Parse([]byte(`{"permissions":{"allow":["mcp__srv__read"],"deny":["mcp__srv__drop","Bash"],"defaultMode":"acceptEdits","additionalDirectories":["../x"]}}`), "json", "settings.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Approvals.Rules) != 2 || cfg.Approvals.Rules[0].ID != "permissions/deny[0]" || !slices.Equal(cfg.IgnoredPermissions, []string{"Bash"}) {
		t.Errorf("rules %+v, ignored %q", cfg.Approvals.Rules, cfg.IgnoredPermissions)
	}
	if _, err := Parse([]byte(`{"permissions":{"always":["mcp__srv"]}}`), "json", "settings.json"); err == nil || !strings.Contains(err.Error(), "permissions.always") {
		t.Errorf("an unknown list: %v", err)
	}
}

func FuzzToolPatterns(f *testing.F) {
	for _, s := range []string{"mcp__a__b,mcp__c", "Bash(git log:*) Edit", "mcp__x__(", "(((", "mcp__é__ü"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, p := range SplitToolList(s) {
			if p == "" || strings.TrimSpace(p) != p && !strings.ContainsAny(p, "()") {
				t.Fatalf("SplitToolList(%q) gave %q", s, p)
			}
			server, tool, ok := ParseToolPattern(p)
			if ok && (server == "" || tool == "" || strings.ContainsAny(server+tool, "()")) {
				t.Fatalf("ParseToolPattern(%q) = %q, %q", p, server, tool)
			}
		}
	})
}
