package durable_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/durable"
)

// The executor identity the lease renews is the one the engine records
// workflows under: DBOS__VMID overrides Options.ExecutorID in DBOS, and so
// in the lease too (else a survivor would take over an executor id no
// workflow carries).
func TestExecutorIDIsTheEngines(t *testing.T) {
	for _, tt := range []struct{ env, option, want string }{
		{"", "replica-a", "replica-a"},
		{"vm-7", "replica-a", "vm-7"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			t.Setenv("DBOS__VMID", tt.env)
			e, err := durable.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "d.db"), durable.Options{ExecutorID: tt.option})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if got := e.ExecutorID(); got != tt.want {
				t.Errorf("ExecutorID() = %q, want %q", got, tt.want)
			}
		})
	}
}
