package hooks

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/internal/childproc"
)

// TestSandboxedHook: a hook with a sandbox block reads a canary file when
// the block grants its folder, is refused by the kernel when it does not
// (the hook's answer says which), also when it runs from its pinned copy;
// and a sandboxed hook without a supervisor does not run at all (the call
// is denied).
func TestSandboxedHook(t *testing.T) {
	if childproc.Probe() < 1 {
		t.Skip("this kernel has no Landlock")
	}
	if testSupervisor == nil {
		t.Skip("no supervisor on this system")
	}
	dir := t.TempDir()
	secrets := t.TempDir()
	canary := filepath.Join(secrets, "canary")
	if err := os.WriteFile(canary, []byte("hook-sandbox-canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `if cat "$CANARY" >/dev/null 2>&1; then
  echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"read it"}}'
else
  echo "refused" >&2; exit 2
fi
`
	hookPath := script(t, dir, "hook.sh", body)
	pin := pinOf(t, hookPath)
	elsewhere := t.TempDir()
	tests := []struct {
		name       string
		read       []string
		pinned     bool
		supervisor *childproc.Supervisor
		want       Decision
		reason     string
		wantErr    error
	}{
		{"granted", []string{secrets}, false, testSupervisor, DecisionAsk, "read it", nil},
		{"not granted", []string{elsewhere}, false, testSupervisor, DecisionDeny, "refused", nil},
		{"pinned, granted", []string{secrets}, true, testSupervisor, DecisionAsk, "read it", nil},
		{"pinned, not granted", nil, true, testSupervisor, DecisionDeny, "refused", nil},
		{"no supervisor", []string{secrets}, false, nil, DecisionDeny, "", childproc.ErrNoSupervisor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunnerWith(t, pre(hookPath, func(h *Hook) {
				h.Env = map[string]string{"CANARY": canary}
				h.Sandbox = &childproc.SandboxConfig{Mode: childproc.ModeEnforce, Filesystem: childproc.SandboxFilesystem{Read: tt.read}}
				if tt.pinned {
					h.SHA256 = pin
				}
			}), dir, tt.supervisor)
			v := r.Pre(context.Background(), call)
			if !errors.Is(v.Failure, tt.wantErr) || (tt.wantErr == nil) != (v.Failure == nil) {
				t.Fatalf("failure = %v, want %v", v.Failure, tt.wantErr)
			}
			if v.Decision != tt.want || v.Reason != tt.reason {
				t.Fatalf("got (%q, %q), want (%q, %q)", v.Decision, v.Reason, tt.want, tt.reason)
			}
		})
	}
}
