package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

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
