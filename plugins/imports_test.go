//go:build linux

package plugins_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering pins the package boundaries of the design: a plugin
// author's binary links the credential contract (bindings/contract) and
// the SDK, never the rest of bindings, the host's configuration, approvals
// or host packages (nor viper and go-toml through them); bindings,
// bindings/contract, childproc and llmview import no agenthost package but
// internal leaves (and bindings its contract).
func TestLayering(t *testing.T) {
	tests := []struct {
		pkg       string
		forbidden []string
	}{
		{"./cmd/agenthost-cred-file", []string{
			"github.com/agenthost/agenthost/config", "github.com/agenthost/agenthost/approvals",
			"github.com/agenthost/agenthost/host", "github.com/agenthost/agenthost/plugins",
			"github.com/agenthost/agenthost/bindings",
			"github.com/spf13/viper", "github.com/pelletier/go-toml/v2",
		}},
		{"../bindings", nil},
		{"../bindings/contract", nil},
		{"../internal/childproc", nil},
		{"../llmview", nil}, // the model's tool view is pure: no host package
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			out, err := exec.Command("go", "list", "-deps", tt.pkg).Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", tt.pkg, err)
			}
			deps := strings.Fields(string(out))
			self := deps[len(deps)-1]
			for _, dep := range deps {
				for _, bad := range tt.forbidden {
					if dep == bad {
						t.Errorf("%s imports %s", tt.pkg, dep)
					}
				}
				// A leaf imports only internal leaves of the module.
				if tt.forbidden == nil && dep != self && strings.HasPrefix(dep, "github.com/agenthost/agenthost/") &&
					!strings.HasPrefix(dep, "github.com/agenthost/agenthost/internal/") &&
					(self != "github.com/agenthost/agenthost/bindings" || dep != "github.com/agenthost/agenthost/bindings/contract") {
					t.Errorf("%s imports %s", tt.pkg, dep)
				}
			}
		})
	}
}
