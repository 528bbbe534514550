package stdiorpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Process is the transport of a stdio server: the host starts the
// child itself and speaks JSON-RPC over its stdin and stdout with its own
// RPC (rpc.go) rather than mcp-go's stdio transport, which reads
// each line whole with no bound, drops a line it cannot parse without a
// word, and decodes every line twice.
type Process struct {
	*RPC
	build  func(ctx context.Context) (*exec.Cmd, *childproc.Spawner, error)
	stderr *LineLogger
	out    *wirecheck.LineGuard
	in     *stdinPipe

	cmd       *exec.Cmd
	spawned   *childproc.Spawned // started by the long-lived supervisor
	pipes     []*os.File         // stdout and stderr's read ends of a spawned child
	stderrEOF chan struct{}      // closed when a spawned child's stderr is read to its end
	closeOnce sync.Once
	closeErr  error
}

// Shutdown: stdin closed, then SIGTERM, then SIGKILL (mcp-go's timings).
const (
	stdioGraceful  = 2 * time.Second
	stdioTerminate = 3 * time.Second
	// stdioWaitDelay bounds the wait for the child's output pipes once it
	// has exited (a grandchild may hold them open).
	stdioWaitDelay = time.Second
)

// Options are what a Process is made of.
type Options struct {
	// Build makes the child's command, at every start, and the
	// long-lived supervisor that starts it (nil: the host starts cmd).
	Build func(ctx context.Context) (*exec.Cmd, *childproc.Spawner, error)
	// MaxLine bounds a line of stdout (limits.maxResponseBytes); Fail
	// hears of every line that is not a message.
	MaxLine int64
	Fail    func(*wirecheck.ProtocolError)
	// Requests holds the reader back while the server's requests in
	// flight are at their bound, until AdmitCtx ends.
	Requests *serverreq.Requests
	AdmitCtx context.Context
	Logger   *slog.Logger
}

// NewProcess is the transport of one stdio server; Start starts it.
func NewProcess(o Options) *Process {
	p := &Process{build: o.Build, stderr: NewLineLogger(o.Logger, "server stderr")}
	p.out = wirecheck.NewLineGuard(nil, o.MaxLine, o.Fail)
	p.in = &stdinPipe{}
	p.RPC = NewRPC(p.in, p.out, o.Fail, o.Logger)
	p.requests, p.admitCtx = o.Requests, o.AdmitCtx
	return p
}

// StderrTail is the last lines the child wrote to stderr (LineLogger.Tail).
func (p *Process) StderrTail() []string { return p.stderr.Tail() }

// stdinPipe is the child's stdin once it has started.
type stdinPipe struct{ w io.WriteCloser }

func (s *stdinPipe) Write(b []byte) (int, error) {
	if s.w == nil {
		return 0, errors.New("stdio server not started")
	}
	return s.w.Write(b)
}

func (s *stdinPipe) Close() error {
	if s.w == nil {
		return nil
	}
	return s.w.Close()
}

// Start starts the child, then the reader over its stdout.
func (p *Process) Start(ctx context.Context) error {
	cmd, spawner, err := p.build(ctx)
	if err != nil {
		return err
	}
	if spawner != nil {
		if err := p.spawn(spawner, cmd); err != nil {
			return err
		}
		return p.RPC.Start(ctx)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("failed to create stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("failed to create stdout pipe: %w", err)
	}
	if cmd.Stderr == nil {
		cmd.Stderr = p.stderr
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = stdioWaitDelay
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start command: %w", err)
	}
	p.cmd = cmd
	p.in.w = stdin
	p.out.Reset(stdout)
	return p.RPC.Start(ctx)
}

// spawn starts cmd through the long-lived supervisor, over pipes of its
// own: stdin, stdout (the reader's) and stderr (copied to the logger).
func (p *Process) spawn(spawner *childproc.Spawner, cmd *exec.Cmd) error {
	var ends []*os.File
	closeAll := func() {
		for _, f := range ends {
			_ = f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			ends = append(ends, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return fmt.Errorf("failed to create pipes: %w", err)
	}
	child, err := spawner.StartCmd(cmd, inR, outW, errW)
	_, _, _ = inR.Close(), outW.Close(), errW.Close()
	if err != nil {
		_, _, _ = inW.Close(), outR.Close(), errR.Close()
		return fmt.Errorf("failed to start command: %w", err)
	}
	p.stderrEOF = make(chan struct{})
	go func() {
		defer close(p.stderrEOF)
		_, _ = io.Copy(p.stderr, errR)
	}()
	p.cmd, p.spawned, p.pipes = cmd, child, []*os.File{outR, errR}
	p.in.w = inW
	p.out.Reset(outR)
	return nil
}

// stopSpawned is stopChild for a child of the long-lived supervisor: its
// tree is ended by the supervisor once it exits; its output pipes are
// closed then, after at most stdioWaitDelay for what it wrote last (its
// stderr read to the end, as exec.Cmd's Wait does, so that the error of a
// server that failed to start shows its last lines).
func (p *Process) stopSpawned() {
	c := p.spawned
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-c.Exited():
			return true
		case <-t.C:
			return false
		}
	}
	if !wait(stdioGraceful) {
		_ = c.Signal(syscall.SIGTERM)
		if !wait(stdioTerminate) {
			_ = c.Signal(syscall.SIGKILL)
			<-c.Exited()
		}
	}
	t := time.NewTimer(stdioWaitDelay)
	select {
	case <-p.stderrEOF:
	case <-t.C:
	}
	t.Stop()
	for _, f := range p.pipes {
		_ = f.Close()
	}
}

// Close ends the requests waiting and stdin, then the child: it has
// stdioGraceful to exit on its own, then gets SIGTERM, then SIGKILL; then
// what is left of its process tree gets the same (childproc).
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.RPC.Close()
		if p.cmd == nil {
			return
		}
		if p.spawned != nil {
			p.stopSpawned()
			return
		}
		if err := stopChild(p.cmd); err != nil && p.closeErr == nil {
			p.closeErr = err
		}
		// What the server started (a shell's background jobs, a worker
		// pool) ends with it.
		childproc.TerminateTree(p.cmd.Process.Pid, childproc.Grace)
		childproc.ReleaseSandbox(p.cmd.Process.Pid)
	})
	return p.closeErr
}

// stopChild waits for a child whose stdin is closed, signalling it when it
// does not exit in time.
func stopChild(cmd *exec.Cmd) error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	wait := func(d time.Duration) (error, bool) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(stdioGraceful); ok {
		return exitError(err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	if err, ok := wait(stdioTerminate); ok {
		return exitError(err)
	}
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("failed to kill process: %w", err)
	}
	return exitError(<-exited)
}

// exitError keeps the errors of Wait that say something went wrong; an exit
// status after the host closed stdin (or signalled) is the normal end.
func exitError(err error) error {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil
	}
	return err
}
