package hooks

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/childproc"
)

// Options configure a Runner.
type Options struct {
	// Dir is the hooks' working directory and their CLAUDE_PROJECT_DIR (the
	// configuration file's folder); empty means the current directory.
	Dir string
	// Getenv reads the host's environment for the basic variables a hook
	// inherits; nil means os.Getenv.
	Getenv func(string) string
	// Supervisor, when set, runs every hook under a supervisor process
	// (childproc.Supervisor) that ends the hook's whole tree when the hook
	// exits and when the host dies, even by SIGKILL, including what called
	// setsid and lost its parent. Without it the hook's tree is killed by
	// the host (childproc.KillGroupTree), which cannot find such an
	// orphan, nor act once the host is killed.
	Supervisor *childproc.Supervisor
}

// Runner runs configured hooks. Safe for concurrent use.
type Runner struct {
	pre, post, permission []group
	dir                   string
	cwd                   string
	getenv                func(string) string
	supervisor            *childproc.Supervisor
}

type group struct {
	match matcher
	hooks []*hook
}

type hook struct {
	Hook
	id      string
	timeout time.Duration
	env     []string
	sum     []byte // the decoded SHA256 pin, nil when none
	// supervisor, when set, runs the hook (Options.Supervisor).
	supervisor *childproc.Supervisor
	// sandbox, when set, confines the hook (Hook.Sandbox).
	sandbox *childproc.Sandbox
}

// New compiles cfg. It fails when cfg does not validate.
func New(cfg Config, opts Options) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	r := &Runner{dir: opts.Dir, getenv: opts.Getenv, supervisor: opts.Supervisor}
	if r.getenv == nil {
		r.getenv = os.Getenv
	}
	r.cwd = r.dir
	if r.cwd == "" {
		r.cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(r.cwd); err == nil {
		r.cwd = abs
	}
	var err error
	if r.pre, err = r.compile(cfg.PreToolUse); err != nil {
		return nil, err
	}
	if r.post, err = r.compile(cfg.PostToolUse); err != nil {
		return nil, err
	}
	if r.permission, err = r.compile(cfg.PermissionRequest); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Runner) compile(groups []Group) ([]group, error) {
	out := make([]group, 0, len(groups))
	for _, g := range groups {
		m, _ := compileMatcher(g.Matcher) // validated
		cg := group{match: m}
		for _, h := range g.Hooks {
			ch := &hook{Hook: h, id: h.ID, timeout: time.Duration(h.Timeout * float64(time.Second)), supervisor: r.supervisor}
			if h.SHA256 != "" {
				ch.sum, _ = hex.DecodeString(h.SHA256) // validated
			}
			if ch.id == "" {
				ch.id = defaultID(h.Command)
			}
			if h.Sandbox != nil {
				sb, err := h.Sandbox.Child("")
				if err != nil {
					return nil, fmt.Errorf("hooks: hook %s: sandbox: %w", ch.id, err)
				}
				ch.sandbox = sb
			}
			if ch.timeout <= 0 {
				ch.timeout = DefaultTimeout
			}
			env := make(map[string]string, len(h.Env)+1)
			env["CLAUDE_PROJECT_DIR"] = r.cwd
			for k, v := range h.Env {
				env[k] = v
			}
			ch.env = childproc.Env(r.getenv, env)
			cg.hooks = append(cg.hooks, ch)
		}
		out = append(out, cg)
	}
	return out, nil
}

// defaultID is the base name of the command's first word.
func defaultID(command string) string {
	f := strings.Fields(command)
	if len(f) == 0 {
		return "hook"
	}
	return filepath.Base(f[0])
}

// HasPre and HasPost report whether any hook of the event is configured
// (a nil Runner has none).
func (r *Runner) HasPre() bool  { return r != nil && len(r.pre) > 0 }
func (r *Runner) HasPost() bool { return r != nil && len(r.post) > 0 }

// Call is the tool call hooks are run for.
type Call struct {
	SessionID string
	CallID    string
	Server    string
	Tool      string
	// Arguments are the model's arguments (never secure values).
	Arguments json.RawMessage
	// SecureParams are the names of the tool's secure parameters; hooks
	// see names, never values.
	SecureParams []string
	// Approval is set for PermissionRequest hooks.
	Approval *Approval
}

// input is the JSON a hook reads on stdin: Claude Code's fields, plus
// agenthost's own under "agenthost".
type input struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	HookEventName  string          `json:"hook_event_name"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	Agenthost      inputExtra      `json:"agenthost"`
}

type inputExtra struct {
	Server       string   `json:"server"`
	Tool         string   `json:"tool"`
	SecureParams []string `json:"secureParams"`
	// Approval is set for PermissionRequest hooks.
	Approval *Approval `json:"approval,omitempty"`
}

// Approval is what a PermissionRequest hook is told of the approval
// request.
type Approval struct {
	// ID is the approval request's id.
	ID string `json:"id"`
	// Approvers is how many distinct approvers must allow.
	Approvers int `json:"approvers"`
	// Rules are the ids of the rules that asked; Reason says why, for
	// operators.
	Rules  []string `json:"rules"`
	Reason string   `json:"reason"`
}

func (r *Runner) input(event string, c Call, response json.RawMessage) ([]byte, error) {
	args := c.Arguments
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	secure := c.SecureParams
	if secure == nil {
		secure = []string{}
	}
	in := input{
		SessionID: c.SessionID, Cwd: r.cwd, PermissionMode: "default", HookEventName: event,
		ToolName: ToolName(c.Server, c.Tool), ToolInput: args, ToolUseID: c.CallID, ToolResponse: response,
		Agenthost: inputExtra{Server: c.Server, Tool: c.Tool, SecureParams: secure, Approval: c.Approval},
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding the hook input: %w", err)
	}
	return append(b, '\n'), nil
}

// Errors a failed hook reports (wrapped in Verdict.Failure).
var (
	// ErrTimeout: the hook did not exit within its timeout.
	ErrTimeout = errors.New("hook timed out")
	// ErrFailed: the hook could not be run, or exited with a status other
	// than 0 or 2.
	ErrFailed = errors.New("hook failed")
	// ErrBadOutput: the hook's stdout was JSON agenthost cannot read, or
	// asked for something agenthost does not do (updatedInput).
	ErrBadOutput = errors.New("hook output not usable")
	// ErrPinMismatch: the executable's SHA-256 is not the pinned one.
	ErrPinMismatch = errors.New("hook executable does not match its sha256 pin")
)

// maxOutput bounds what is read of a hook's stdout and stderr.
const maxOutput = 1 << 20

// exitBlock is the exit status with which a Claude Code hook blocks.
const exitBlock = 2

// result is one hook run.
type result struct {
	status int // exit status (0 or exitBlock; other statuses are errors)
	stdout []byte
	stderr []byte
}

// run runs one hook with stdin and waits for it, at most its timeout.
// Under a supervisor, the supervisor is the process started here (in the
// hook's process group, which it leads); it starts the hook in a group of
// its own, passes the pinned copy on as the hook's fd 3, ends the hook's
// tree when the hook exits, and exits with the hook's status (128+signal
// for a hook killed by a signal). The host's kills below reach the hook's
// tree through the supervisor's group and its descendants.
func (h *hook) run(ctx context.Context, dir string, stdin []byte) (result, error) {
	cmd, pinned, err := h.command(dir)
	if err != nil {
		return result{}, err
	}
	defer pinned.Close()
	cmd.Dir = dir
	cmd.Env = h.env
	cmd.SysProcAttr = procAttr(syscall.SIGKILL)
	// The pinned copy's path (/proc/self/fd/3) means something only in the
	// child; the copy itself was checked to be executable.
	runnable := pinned != nil || childproc.Runnable(cmd)
	switch {
	case h.sandbox != nil:
		// A sandboxed hook never runs unsandboxed: no supervisor, or a
		// kernel that cannot apply the sandbox, fails the hook.
		if !runnable {
			return result{}, fmt.Errorf("%w: cannot start: %q is not an executable file", ErrFailed, h.Command)
		}
		cmd.SysProcAttr = procAttr(syscall.SIGTERM)
		if _, err := h.supervisor.WrapSandboxed(cmd, h.sandbox); err != nil {
			return result{}, fmt.Errorf("%w: not started: %w", ErrFailed, err)
		}
	case h.supervisor.Spawner() != nil && runnable:
		// The supervisor's long-lived process starts it, and ends its
		// tree when it exits and when the host dies.
		return h.runSpawned(ctx, cmd, pinned, stdin)
	case h.supervisor != nil && runnable:
		// The supervisor gets SIGTERM when the host dies, and then ends
		// the hook's tree.
		cmd.SysProcAttr = procAttr(syscall.SIGTERM)
		h.supervisor.Wrap(cmd)
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout := &childproc.CappedBuffer{Max: maxOutput}
	stderr := &childproc.CappedBuffer{Max: maxOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// A grandchild that keeps the pipes open must not hold the call.
	cmd.WaitDelay = 100 * time.Millisecond
	// The parent-death signal follows the thread that forks the child: the
	// thread stays this goroutine's until the hook has been reaped, so the
	// runtime cannot retire it (and kill the hook) while the hook runs.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		return result{}, fmt.Errorf("%w: cannot start: %w", ErrFailed, err)
	}
	pinned.Close() // the child has its own descriptor of the copy
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case err = <-done:
		// Whatever the hook left running in its tree goes with it.
		childproc.KillGroupLeftovers(cmd.Process.Pid)
	case <-timer.C:
		childproc.KillGroupTree(cmd.Process.Pid)
		<-done
		return result{}, fmt.Errorf("%w after %s", ErrTimeout, h.timeout)
	case <-ctx.Done():
		childproc.KillGroupTree(cmd.Process.Pid)
		<-done
		return result{}, fmt.Errorf("%w: %w", ErrFailed, ctx.Err())
	}
	res := result{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if stdout.Over() || stderr.Over() {
		return res, fmt.Errorf("%w: more than %d bytes of output", ErrBadOutput, maxOutput)
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() == exitBlock:
		res.status = exitBlock
		return res, nil
	case errors.As(err, &exitErr) && exitErr.ExitCode() >= 0:
		return res, fmt.Errorf("%w: exit status %d%s", ErrFailed, exitErr.ExitCode(), stderrNote(res.stderr))
	case errors.Is(err, exec.ErrWaitDelay):
		return res, nil // exited 0; a leftover child held the pipes
	}
	return res, fmt.Errorf("%w: %w", ErrFailed, err)
}

// runSpawned is run for a hook the supervisor's long-lived process
// starts: stdin, stdout and stderr are pipes of the host's; a timeout or
// the end of ctx kills the hook, and the supervisor ends its tree once it
// has exited.
func (h *hook) runSpawned(ctx context.Context, cmd *exec.Cmd, pinned *childproc.Pinned, stdin []byte) (result, error) {
	var ends []*os.File
	pipe := func() (r, w *os.File) {
		if r, w, err := os.Pipe(); err == nil {
			ends = append(ends, r, w)
			return r, w
		}
		return nil, nil
	}
	inR, inW := pipe()
	outR, outW := pipe()
	errR, errW := pipe()
	defer func() {
		for _, f := range ends {
			_ = f.Close()
		}
	}()
	if len(ends) != 6 {
		return result{}, fmt.Errorf("%w: cannot start: no pipes", ErrFailed)
	}
	child, err := h.supervisor.Spawner().StartCmd(cmd, inR, outW, errW)
	pinned.Close()
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	if err != nil {
		return result{}, fmt.Errorf("%w: cannot start: %w", ErrFailed, err)
	}
	go func() {
		_, _ = inW.Write(stdin)
		_ = inW.Close()
	}()
	stdout := &childproc.CappedBuffer{Max: maxOutput}
	stderr := &childproc.CappedBuffer{Max: maxOutput}
	var copies sync.WaitGroup
	copies.Go(func() { _, _ = io.Copy(stdout, outR) })
	copies.Go(func() { _, _ = io.Copy(stderr, errR) })
	timer := time.NewTimer(h.timeout)
	defer timer.Stop()
	select {
	case <-child.Exited():
	case <-timer.C:
		_ = child.Signal(syscall.SIGKILL)
		<-child.Exited()
		return result{}, fmt.Errorf("%w after %s", ErrTimeout, h.timeout)
	case <-ctx.Done():
		_ = child.Signal(syscall.SIGKILL)
		<-child.Exited()
		return result{}, fmt.Errorf("%w: %w", ErrFailed, ctx.Err())
	}
	// A grandchild that keeps the pipes open must not hold the call.
	copied := make(chan struct{})
	go func() { copies.Wait(); close(copied) }()
	select {
	case <-copied:
	case <-time.After(100 * time.Millisecond):
		_, _ = outR.Close(), errR.Close()
		<-copied
	}
	res := result{stdout: stdout.Bytes(), stderr: stderr.Bytes()}
	if stdout.Over() || stderr.Over() {
		return res, fmt.Errorf("%w: more than %d bytes of output", ErrBadOutput, maxOutput)
	}
	switch status := child.Wait(); {
	case status == 0:
		return res, nil
	case status == exitBlock:
		res.status = exitBlock
		return res, nil
	case status > 0:
		return res, fmt.Errorf("%w: exit status %d%s", ErrFailed, status, stderrNote(res.stderr))
	}
	return res, fmt.Errorf("%w: %w", ErrFailed, childproc.ErrSupervisorGone)
}

// plainPath reports a command that is one word without anything a shell
// would interpret: running it directly is what sh -c would do, one process
// sooner.
func plainPath(command string) bool {
	return command != "" && !strings.ContainsAny(command, " \t\n\"'\\$`|&;<>()*?[]{}~#=%!")
}

// command builds the hook's process. A command run directly (args, a
// pin, or a single plain word) is resolved once (childproc.LookPath:
// relative paths from the config file's folder, a bare name in PATH), and
// that one file is what is pinned and run: a pinned hook runs from the
// sealed copy of the bytes that were hashed (childproc.OpenPinned), so a
// file or symlink swapped after the check cannot run, and a script's
// interpreter reads that copy too. The copy, when there is one, is
// released once the child has started.
func (h *hook) command(dir string) (*exec.Cmd, *childproc.Pinned, error) {
	if h.sum == nil && h.Args == nil && !plainPath(h.Command) {
		return exec.Command("/bin/sh", "-c", h.Command), nil, nil
	}
	path, err := childproc.LookPath(h.Command, dir)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	cmd := exec.Command(path, h.Args...)
	if !strings.ContainsRune(h.Command, filepath.Separator) {
		cmd.Args[0] = h.Command // argv[0] is the name, as exec gives it
	}
	if h.sum == nil {
		return cmd, nil, nil
	}
	pinned, err := childproc.OpenPinned(path, h.sum, childproc.PinOptions{})
	var mismatch *childproc.PinMismatchError
	switch {
	case errors.As(err, &mismatch):
		return nil, nil, fmt.Errorf("%w: %s has sha256 %x", ErrPinMismatch, path, mismatch.Got)
	case err != nil:
		return nil, nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	if err := pinned.Apply(cmd); err != nil {
		pinned.Close()
		return nil, nil, fmt.Errorf("%w: %w", ErrFailed, err)
	}
	return cmd, pinned, nil
}

// stderrNote is a short quote of a failed hook's stderr for the operator.
func stderrNote(stderr []byte) string {
	s := oneLine(string(stderr), 200)
	if s == "" {
		return ""
	}
	return ": " + s
}

// oneLine folds whitespace and cuts s to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}
