package proctree

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Arg is the first argument that makes a binary that calls Main (or
// childproc.MaybeSupervise) act as a supervisor instead of itself.
const Arg = "__agenthost-supervise"

// SandboxArg, after Arg, is followed by the sandbox the supervisor applies
// (package childproc's; Main leaves such a start to it).
const SandboxArg = "-sandbox"

// ServeArg, after Arg, makes the supervisor a long-lived one (Serve, on
// Linux): it spawns every child its host asks for over the socket on fd 3.
const ServeArg = "-serve"

// ExitCannotRun is the shell's "command not found / cannot run" status.
const ExitCannotRun = 127

// Grace is how long a tree gets to exit after SIGTERM before it is
// SIGKILLed. It stays well under mcp-go's own escalation (SIGTERM 2 s after
// stdin closes, SIGKILL 3 s later), so a supervisor always finishes its
// sweep before it could be killed itself.
const Grace = time.Second

// Child is what a supervisor runs: Path with Argv, the supervisor's
// standard streams and Extra descriptors from 3 on. Before runs on the
// thread that starts the child, right before it (a sandbox applies itself
// there); a Before error means no child. After runs once the child started.
type Child struct {
	Path   string
	Argv   []string
	Extra  int
	Before func() error
	After  func()
}

// ParseArgs parses "N PATH ARGV0 ARGS..." (N extra descriptors from 3 on).
func ParseArgs(args []string) (Child, error) {
	if len(args) < 3 {
		return Child{}, errors.New("want: N PATH ARGV0 [ARGS...]")
	}
	n, err := strconv.Atoi(args[0])
	if err != nil || n < 0 || n > 64 {
		return Child{}, errors.New("bad descriptor count " + strconv.Quote(args[0]))
	}
	return Child{Path: args[1], Argv: args[2:], Extra: n}, nil
}

// Complain writes the supervisor's error to its standard error.
func Complain(err error) {
	_, _ = os.Stderr.WriteString("agenthost supervisor: " + err.Error() + "\n")
}

// TerminateBy ends the tree that signal reaches (it sends sig to every
// member and returns how many it found): SIGTERM, up to grace for the tree
// to empty, then SIGKILL.
func TerminateBy(signal func(syscall.Signal) int, grace time.Duration) {
	if signal(syscall.SIGTERM) == 0 {
		return
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if signal(0) == 0 {
			return
		}
	}
	for pass := 0; pass < 10; pass++ {
		if signal(syscall.SIGKILL) == 0 {
			return
		}
	}
}
