//go:build linux

package cmdutil_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
)

// TestConnectPrestartsTheSupervisor: Connect starts the long-lived
// supervisor before it builds the host when a server it connects is one
// the supervisor spawns (an enabled stdio server outside a sandbox; with
// --server, that server), and starts none otherwise. The supervisor is a
// stand-in that says it started; the target's Check, which runs before
// the host is built, looks for it.
func TestConnectPrestartsTheSupervisor(t *testing.T) {
	const servers = "mcpServers:\n  local:\n    command: /bin/true\n  remote:\n    url: http://127.0.0.1:1/mcp\n"
	for _, tc := range []struct {
		name   string
		config string
		server string
		want   bool
	}{
		{"every server, one stdio", servers, "", true},
		{"the stdio server named", servers, "local", true},
		{"the HTTP server named", servers, "remote", false},
		{"a disabled stdio server", "mcpServers:\n  local:\n    command: /bin/true\n    disabled: true\n", "", false},
		{"a sandboxed stdio server", "mcpServers:\n  local:\n    command: /bin/true\n    sandbox:\n      mode: enforce\n", "", false},
		{"no servers", "llm:\n  model: m\n", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := cmdtest.Factory(t, tc.config, "")
			sup, started := cmdtest.StandInSupervisor(t)
			f.Supervisor = sup
			wait := 10 * time.Second
			if !tc.want {
				wait = 100 * time.Millisecond // a supervisor started wrongly shows by then
			}
			seen := false
			stop := errors.New("stopped at Check")
			check := func() error { seen = started(wait); return stop }
			_, _, err := f.Connect(context.Background(), cmdutil.Target{Server: tc.server, Check: check}, nil)
			if !errors.Is(err, stop) {
				t.Fatalf("Connect: %v, want the stop at Check", err)
			}
			if seen != tc.want {
				t.Fatalf("supervisor started before the host was built: %v, want %v", seen, tc.want)
			}
		})
	}
}
