package hooks

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/agenthost/agenthost/internal/childproc"
)

// testSupervisor runs the tests' hooks as the agenthost CLI runs them:
// under the test binary itself as their supervisor (TestMain calls
// childproc.MaybeSupervise). nil where there is no supervisor (outside
// Linux), as for an embedder without one.
var testSupervisor = childproc.Self()

// hostHelperEnv makes the test binary a host that runs one PreToolUse hook
// (the command in the variable) under its supervisor, and then waits to be
// killed: TestHookTreeDiesWithTheHost SIGKILLs it while the hook runs.
const hostHelperEnv = "HOOKS_TEST_HOST_HOOK"

func TestMain(m *testing.M) {
	childproc.MaybeSupervise()
	if command := os.Getenv(hostHelperEnv); command != "" {
		os.Exit(hostHelper(command))
	}
	os.Exit(m.Run())
}

// hostHelper runs command as a hook under the supervisor and reports how
// it ended (the test kills this process long before that).
func hostHelper(command string) int {
	r, err := New(pre(command, func(h *Hook) { h.Timeout = 300 }), Options{Supervisor: testSupervisor})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	v := r.Pre(context.Background(), call)
	fmt.Fprintf(os.Stderr, "the hook ended: %+v\n", v)
	return 1
}
