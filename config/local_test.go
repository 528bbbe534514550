package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseLocal(t *testing.T) {
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
			l, err := ParseLocal([]byte(tt.in))
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

func FuzzParseLocal(f *testing.F) {
	f.Add([]byte("approvals:\n  always:\n  - server: shop\n    tool: delete_order\n"))
	f.Add([]byte("approvals: {always: [{server: '*', tool: '[a'}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := ParseLocal(data)
		if err != nil {
			return
		}
		for _, e := range l.Approvals.Always {
			r := e.Rule()
			if r.Decide != "allow" || !strings.HasPrefix(r.ID, LocalRulePrefix) || e.Server == "" || e.Tool == "" {
				t.Fatalf("entry %+v loads as rule %+v", e, r)
			}
		}
	})
}

// TestLocalAlwaysLoadsAsRules: an entry saved beside the config file is an
// allow rule of the loaded configuration, matching only that tool (glob
// characters in a name are literal), and removing it removes the rule.
func TestLocalAlwaysLoadsAsRules(t *testing.T) {
	t.Setenv(ManagedPolicyEnv, filepath.Join(t.TempDir(), "none.yaml"))
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "agenthost.yaml")
	if err := os.WriteFile(cfgFile, []byte("approvals:\n  rules:\n  - {id: r1, when: {tool: [drop]}, decide: deny}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := LoadLocal(LocalPath(cfgFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.AddAlways("shop", "del*", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := l.AddAlways("shop", "del*", time.Now()); err != nil { // twice is once
		t.Fatal(err)
	}
	cfg, err := Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Approvals.Rules) != 2 {
		t.Fatalf("rules %+v, want the config's and the local one", cfg.Approvals.Rules)
	}
	r := cfg.Approvals.Rules[1]
	if r.ID != "local/always/shop/del*" || r.Decide != "allow" || r.When.Tool[0] != `del\*` || r.When.Server[0] != "shop" {
		t.Errorf("local rule %+v", r)
	}
	if info, err := os.Stat(LocalPath(cfgFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("local settings file: %v %v", info, err)
	}
	if ok, err := cfg.Local.Remove(r.ID); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	cfg, err = Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Approvals.Rules) != 1 {
		t.Errorf("rules after remove %+v", cfg.Approvals.Rules)
	}
}
