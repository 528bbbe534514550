package childproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// SuperviseArg is the first argument that makes a binary that calls
// MaybeSupervise act as a supervisor instead of itself.
const SuperviseArg = proctree.Arg

// Supervisor runs children under a supervisor process: Path is a binary
// whose main calls MaybeSupervise before anything else.
type Supervisor struct {
	Path string
	// Small, when set, is a small program that supervises as Path does,
	// but without a sandbox: its main package imports
	// internal/childproc/supervisor and nothing else of size, so its start
	// is the exec of a small static binary instead of the whole program's
	// (docs/PERFORMANCE.md, "The small supervisor"). The long-lived
	// supervisor (Spawner) and Wrap run it; WrapSandboxed and
	// MeasureSandbox always run Path, which holds the sandbox.
	Small string

	spawnerOnce sync.Once
	spawner     *Spawner
}

// ErrSupervisorGone is the error of a child whose long-lived supervisor
// ended before it did (Spawned.Wait's status is then -1).
var ErrSupervisorGone = errors.New("the supervisor ended")

// ErrSpawnTooLarge is the error of a command the long-lived supervisor
// cannot be asked to start: its arguments and environment together are
// over one message on the supervisor's socket (proctree.MaxMessage). The
// error wrapping it gives both sizes and the limit.
var ErrSpawnTooLarge = errors.New("the command's arguments and environment are too large for the supervisor")

// Spawner is the supervisor's long-lived process (Linux; nil elsewhere),
// started at its first child: children it starts need no exec of their
// own supervisor.
func (s *Supervisor) Spawner() *Spawner {
	if s == nil || !spawnerSupported {
		return nil
	}
	s.spawnerOnce.Do(func() { s.spawner = NewSpawner(s.plain()) })
	return s.spawner
}

// Prestart starts the long-lived supervisor now (Spawner.Prestart), where
// there is one: for a caller that knows it will start a child through it
// and has other setup to do first.
func (s *Supervisor) Prestart() {
	if sp := s.Spawner(); sp != nil {
		sp.Prestart()
	}
}

// Self is the running binary as a Supervisor, for programs that call
// MaybeSupervise first thing in main. It is nil where a supervisor cannot
// learn of the host's death (outside Linux).
func Self() *Supervisor {
	if p := selfExe(); p != "" {
		return &Supervisor{Path: p}
	}
	return nil
}

// Wrap rewrites cmd to run its command under the supervisor. cmd must not
// have been started; its environment, directory, standard streams and
// extra files reach the command unchanged (the supervisor passes its own
// descriptors on, it copies nothing). The supervisor leads the session;
// give cmd Attr(syscall.SIGTERM), so that the host's death reaches it as a
// signal it can act on. A nil Supervisor leaves cmd alone, as does a cmd
// whose executable was not found (cmd.Err), so Start reports that. Check
// Runnable first where a missing command must be reported by name.
func (s *Supervisor) Wrap(cmd *exec.Cmd) {
	if s == nil || cmd.Err != nil {
		return
	}
	s.wrapWith(cmd, s.plain())
}

// wrapWith is Wrap with the supervisor program path.
func (s *Supervisor) wrapWith(cmd *exec.Cmd, path string) {
	args := make([]string, 0, len(cmd.Args)+4)
	args = append(args, path, SuperviseArg, strconv.Itoa(len(cmd.ExtraFiles)), cmd.Path)
	args = append(args, cmd.Args...)
	cmd.Path, cmd.Args = path, args
}

// plain is the program that supervises without a sandbox: Small when set.
func (s *Supervisor) plain() string {
	if s.Small != "" {
		return s.Small
	}
	return s.Path
}

// Runnable reports whether cmd's executable exists and is executable (as
// far as can be told before exec). A command that is not is better started
// without a supervisor: its Start error then names the command.
func Runnable(cmd *exec.Cmd) bool {
	if cmd.Err != nil {
		return false
	}
	check := cmd.Path
	if !filepath.IsAbs(check) && cmd.Dir != "" {
		check = filepath.Join(cmd.Dir, check)
	}
	_, err := exec.LookPath(check)
	return err == nil || errors.Is(err, exec.ErrDot)
}

// MaybeSupervise makes the program a supervisor when it was started as one
// (by a Supervisor's Wrap): it then runs the command, ends the command's
// whole tree when the command exits, when it is asked to stop (SIGTERM,
// SIGINT, SIGHUP) or when the host dies, and exits with the command's
// status. Otherwise it returns at once. Call it first thing in main.
func MaybeSupervise() {
	if len(os.Args) < 2 || os.Args[1] != SuperviseArg {
		return
	}
	os.Exit(superviseArgs(os.Args[2:]))
}

// superviseArgs parses "[-sandbox JSON] N PATH ARGV0 ARGS..." (N extra
// descriptors from 3 on) and supervises.
func superviseArgs(args []string) int {
	if len(args) == 1 && args[0] == proctree.ServeArg {
		code, _ := proctree.Main(args) // the long-lived supervisor (Spawner)
		return code
	}
	var sb *Sandbox
	if len(args) >= 2 && args[0] == sandboxArg {
		sb = new(Sandbox)
		if err := json.Unmarshal([]byte(args[1]), sb); err != nil {
			fmt.Fprintf(os.Stderr, "agenthost supervisor: bad sandbox: %v\n", err)
			return exitCannotRun
		}
		args = args[2:]
		if len(args) == 1 && args[0] == measureArg {
			return measureSandbox(sb)
		}
	}
	c, err := proctree.ParseArgs(args)
	if err != nil {
		proctree.Complain(err)
		return exitCannotRun
	}
	return supervise(c, sb)
}

// exitCannotRun is the shell's "command not found / cannot run" status.
const exitCannotRun = proctree.ExitCannotRun
