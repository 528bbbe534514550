package config

import (
	"strings"
	"testing"
)

// approvals.store and audit.store take a DSN with ${VAR} expanded (the
// password usually comes from the environment).
func TestStoreDSNs(t *testing.T) {
	isolateEnv(t)
	t.Setenv("T_PGPASS", "pw-canary")
	unsetEnv(t, "T_UNSET_PASS")
	tests := []struct {
		name, approvals, audit string
		wantApprovals          string
		wantErr                string // a line of the error; "" for none
	}{
		{name: "empty", wantApprovals: ""},
		{name: "sqlite", approvals: "sqlite:./agenthost.db", audit: "sqlite:./audit.db", wantApprovals: "sqlite:./agenthost.db"},
		{name: "postgres with a password from the environment", approvals: "postgres://agenthost:${T_PGPASS}@db:5432/agenthost",
			audit: "postgresql://agenthost:${T_PGPASS}@db/agenthost", wantApprovals: "postgres://agenthost:pw-canary@db:5432/agenthost"},
		{name: "unset variable", approvals: "postgres://u:${T_UNSET_PASS}@db/x",
			wantErr: "cfg.yaml: approvals.store: environment variable T_UNSET_PASS is not set"},
		{name: "sqlite without a path", audit: "sqlite:", wantErr: "cfg.yaml: audit.store: sqlite: needs a file path (sqlite:PATH)"},
		{name: "unknown scheme", approvals: "mysql://u:pw-canary@db/x",
			wantErr: "cfg.yaml: approvals.store: must be sqlite:PATH or a postgres://user:password@host:port/database URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc := "approvals:\n  store: \"" + tc.approvals + "\"\naudit:\n  store: \"" + tc.audit + "\"\n"
			cfg, err := Parse([]byte(doc), "yaml", "cfg.yaml")
			if tc.wantErr != "" {
				requireLines(t, err, tc.wantErr)
				if strings.Contains(err.Error(), "pw-canary") {
					t.Errorf("the error repeats the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Approvals.Store != tc.wantApprovals {
				t.Errorf("approvals.store = %q, want %q", cfg.Approvals.Store, tc.wantApprovals)
			}
		})
	}
}
