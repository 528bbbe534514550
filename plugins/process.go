package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/go-plugin/runner"

	"github.com/agenthost/agenthost/internal/childproc"
)

// processRunner is the go-plugin runner.Runner for a plugin executable. It
// exists (instead of go-plugin's default) to control the child precisely:
// no stdin (go-plugin's default hands the plugin the host's terminal), its
// own session and process group, death with the host (Linux), and a kill
// that takes the plugin's whole process tree with it.
type processRunner struct {
	cmd *exec.Cmd
	// spawner, when set, starts cmd (the supervisor's long-lived
	// process); spawned is the child then, and pipes the child's ends of
	// stdout and stderr until it has them.
	spawner *childproc.Spawner
	spawned *childproc.Spawned
	pipes   []*os.File
	stdout  io.ReadCloser
	stderr  io.ReadCloser

	pid       atomic.Int64
	killed    atomic.Bool // Kill was called; see Start
	exited    chan struct{}
	exitOnce  sync.Once
	diagnosis string
	name      string
	// started runs once the child has been started (or failed to start);
	// it releases the pinned copy of the executable.
	started func()
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner prepares cmd: no stdin, a session of its own, death
// with the host; with a supervisor, the supervisor leads the session and
// gets SIGTERM when the host dies, to end the plugin's whole tree. With a
// sandbox, the supervisor applies it before it starts the plugin; a
// sandbox that cannot be applied (or no supervisor) is an error: a
// sandboxed plugin never runs unsandboxed.
func newProcessRunner(cmd *exec.Cmd, diagnosis string, started func(), supervisor *childproc.Supervisor, sb *childproc.Sandbox) (*processRunner, error) {
	cmd.Stdin = nil
	// The name go-plugin logs the plugin under (and names the stderr
	// sub-logger the Source mutes after): the configured path, not the
	// pinned copy's or the supervisor's.
	name := cmd.Args[0]
	switch {
	case sb != nil:
		cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
		if _, err := supervisor.WrapSandboxed(cmd, sb); err != nil {
			return nil, fmt.Errorf("plugin not started: %w", err)
		}
	case supervisor.Spawner() != nil:
		return newSpawnedRunner(cmd, diagnosis, started, supervisor.Spawner(), name)
	case supervisor != nil:
		cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
		supervisor.Wrap(cmd)
	default:
		cmd.SysProcAttr = childproc.Attr(syscall.SIGKILL)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("plugin stdout pipe: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("plugin stderr pipe: %w", err)
	}
	return &processRunner{cmd: cmd, stdout: stdout, stderr: stderr, exited: make(chan struct{}), diagnosis: diagnosis, started: started, name: name}, nil
}

// Start execs the plugin from a goroutine locked to its OS thread that
// lives as long as the plugin: Linux's parent-death signal fires when the
// forking *thread* exits, so that thread must not be retired by the Go
// runtime while the plugin runs. Once Wait has seen the plugin exit the
// goroutine unlocks and ends, handing the thread back to the runtime: a
// thread retired while locked would take with it every other child forked
// from it earlier with a parent-death signal (stdio MCP servers).
// newSpawnedRunner is a runner whose plugin the supervisor's long-lived
// process starts: it is the child of the supervisor, which ends its tree
// when it exits and when the host dies.
func newSpawnedRunner(cmd *exec.Cmd, diagnosis string, started func(), sp *childproc.Spawner, name string) (*processRunner, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("plugin stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		_, _ = outR.Close(), outW.Close()
		return nil, fmt.Errorf("plugin stderr pipe: %w", err)
	}
	return &processRunner{cmd: cmd, spawner: sp, pipes: []*os.File{outW, errW}, stdout: outR, stderr: errR,
		exited: make(chan struct{}), diagnosis: diagnosis, started: started, name: name}, nil
}

// startSpawned is Start for a runner of the long-lived supervisor.
func (r *processRunner) startSpawned() error {
	null, err := os.Open(os.DevNull)
	if err == nil {
		r.spawned, err = r.spawner.StartCmd(r.cmd, null, r.pipes[0], r.pipes[1])
		_ = null.Close()
	}
	for _, f := range r.pipes {
		_ = f.Close()
	}
	if r.started != nil {
		r.started()
	}
	if err != nil {
		r.markExited()
		return fmt.Errorf("exec plugin: %w", err)
	}
	r.pid.Store(int64(r.spawned.Pid))
	if r.killed.Load() {
		_ = r.Kill(context.Background())
	}
	return nil
}

func (r *processRunner) Start(context.Context) error {
	if r.spawner != nil {
		return r.startSpawned()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := r.cmd.Start()
		if r.started != nil {
			r.started()
		}
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		r.pid.Store(int64(r.cmd.Process.Pid))
		// The child runs before its pid is stored here: a Kill in
		// between saw no pid and did nothing, so it is carried out now.
		// (Kill sets killed before reading pid, this stores pid before
		// reading killed: at least one of the two kills the child.)
		if r.killed.Load() {
			_ = r.Kill(context.Background())
		}
		errc <- nil
		<-r.exited
		runtime.UnlockOSThread()
	}()
	if err := <-errc; err != nil {
		r.markExited()
		return fmt.Errorf("exec plugin: %w", err)
	}
	return nil
}

// Wait reaps the plugin, then kills whatever it left behind in its process
// tree: a crashed plugin's children must not outlive it.
func (r *processRunner) Wait(context.Context) error {
	if r.spawned != nil {
		// The supervisor ends the plugin's tree once it has exited.
		status := r.spawned.Wait()
		r.markExited()
		if status != 0 {
			return fmt.Errorf("plugin exited with status %d", status)
		}
		return nil
	}
	err := r.cmd.Wait()
	if pid := int(r.pid.Load()); pid > 0 {
		childproc.KillTree(pid)
	}
	r.markExited()
	return err
}

func (r *processRunner) markExited() { r.exitOnce.Do(func() { close(r.exited) }) }

// Kill kills the plugin and its process tree. Safe to call repeatedly.
// A Kill before the pid is known (even before Start) is remembered and
// done by Start as soon as the child exists.
func (r *processRunner) Kill(context.Context) error {
	r.killed.Store(true)
	pid := int(r.pid.Load())
	if pid <= 0 {
		return nil
	}
	if r.spawned != nil {
		_ = r.spawned.Signal(syscall.SIGKILL)
		return nil
	}
	childproc.KillTree(pid)
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *processRunner) Name() string          { return r.name }

// ID is the pid (empty before start), as go-plugin's own runner reports.
func (r *processRunner) ID() string {
	if pid := r.pid.Load(); pid > 0 {
		return strconv.FormatInt(pid, 10)
	}
	return ""
}

// Diagnose is appended by go-plugin to "unrecognized remote plugin
// message" errors.
func (r *processRunner) Diagnose(context.Context) string { return r.diagnosis }

func (r *processRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *processRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
