//go:build linux

package plugins_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/plugins"
)

// TestSandboxedPlugin runs the file plugin under a sandbox: it reads its
// secrets file when the sandbox grants the file's folder, and is refused
// by the kernel when it does not (the value never comes back); a
// sandboxed plugin without a supervisor does not start at all.
func TestSandboxedPlugin(t *testing.T) {
	if childproc.Probe() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	secrets := t.TempDir()
	file := filepath.Join(secrets, "secrets.json")
	if err := os.WriteFile(file, []byte(`{"orders/token": "sandbox-canary-value"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	supervisor := childproc.Self()
	tests := []struct {
		name       string
		read       []string
		supervisor *childproc.Supervisor
		wantErr    error // nil: any error
		ok         bool
	}{
		{"granted", []string{secrets}, supervisor, nil, true},
		{"not granted", []string{elsewhere}, supervisor, nil, false},
		{"no supervisor", []string{secrets}, nil, childproc.ErrNoSupervisor, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, bin.credFile, func(o *plugins.Options) {
				o.Config = map[string]any{"path": file}
				o.Supervisor = tt.supervisor
				o.Sandbox = &childproc.Sandbox{Read: tt.read, Network: childproc.NetworkNone}
				o.BreakerThreshold = 1
			})
			res, err := h.src.Resolve(context.Background(), bindings.Request{Ref: "orders/token"})
			switch {
			case tt.ok && err != nil:
				t.Fatalf("Resolve: %v\nlogs: %s", err, h.logs)
			case tt.ok && res.Value != "sandbox-canary-value":
				t.Fatalf("Resolve = %q", res.Value)
			case !tt.ok && err == nil:
				t.Fatalf("Resolve = %q, want the sandbox to refuse the read", res.Value)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("Resolve: %v, want %v", err, tt.wantErr)
			}
			if !tt.ok {
				t.Logf("refused: %v", err)
			}
		})
	}
}
