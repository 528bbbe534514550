//go:build linux

package run

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil/cmdtest"
	"github.com/agenthost/agenthost/host/compose"
)

// startedSeenAtOpen are saved sessions whose Open, which run calls before
// it builds the host and connects its servers, asks whether the stand-in
// supervisor was started, and then ends the run.
type startedSeenAtOpen struct {
	started func(time.Duration) bool
	wait    time.Duration
	seen    bool
}

var errStopped = errors.New("stopped at Open")

func (s *startedSeenAtOpen) Open(context.Context, compose.SavedSession, string, string) (cmdutil.SavedEngine, string, bool, error) {
	s.seen = s.started(s.wait)
	return nil, "", false, errStopped
}

// TestRunPrestartsTheSupervisor: with a stdio server to start, run starts
// the long-lived supervisor before it builds the host and connects (its
// start overlaps theirs); with none, it starts no supervisor. The
// supervisor is a stand-in that says it started; the saved sessions'
// Open, called before the host is built, looks for it.
func TestRunPrestartsTheSupervisor(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers string
		want    bool
	}{
		{"a stdio server", "  local:\n    command: /bin/true\n", true},
		{"a disabled stdio server", "  local:\n    command: /bin/true\n    disabled: true\n", false},
		{"a sandboxed stdio server", "  local:\n    command: /bin/true\n    sandbox:\n      mode: enforce\n", false},
		{"an HTTP server", "  remote:\n    url: http://127.0.0.1:1/mcp\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := cmdtest.Factory(t, "llm:\n  model: m\nmcpServers:\n"+tc.servers, "")
			sup, started := cmdtest.StandInSupervisor(t)
			f.Supervisor = sup
			wait := 10 * time.Second
			if !tc.want {
				wait = 100 * time.Millisecond // a supervisor started wrongly shows by then
			}
			sessions := &startedSeenAtOpen{started: started, wait: wait}
			f.Features.Sessions = sessions
			cmd := NewCmdRun(f, nil)
			cmd.SetArgs([]string{"--save", "hello"})
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			if err := cmd.Execute(); !errors.Is(err, errStopped) {
				t.Fatalf("run: %v, want the stop at Open", err)
			}
			if sessions.seen != tc.want {
				t.Fatalf("supervisor started before the host was built: %v, want %v", sessions.seen, tc.want)
			}
		})
	}
}
