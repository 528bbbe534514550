package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/internal/childproc"
)

// stdioProcess is the transport of a stdio server: the host starts the
// child itself and speaks JSON-RPC over its stdin and stdout with its own
// stdioRPC (stdiorpc.go) rather than mcp-go's stdio transport, which reads
// each line whole with no bound, drops a line it cannot parse without a
// word, and decodes every line twice.
type stdioProcess struct {
	*stdioRPC
	build  func(ctx context.Context) (*exec.Cmd, error)
	stderr *lineLogger
	out    *lineGuard
	in     *stdinPipe

	cmd       *exec.Cmd
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

func newStdioProcess(c *Conn, maxLine int64, fail func(*ProtocolError), requests *serverRequests) *stdioProcess {
	p := &stdioProcess{
		build: func(ctx context.Context) (*exec.Cmd, error) {
			return c.command(ctx, c.cfg.Command, nil, c.cfg.Args)
		},
		stderr: &lineLogger{logger: c.logger, msg: "server stderr"},
	}
	p.out = newLineGuard(nil, maxLine, fail)
	p.in = &stdinPipe{}
	p.stdioRPC = newStdioRPC(p.in, p.out, fail, c.logger)
	p.requests, p.admitCtx = requests, c.life
	return p
}

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
func (p *stdioProcess) Start(ctx context.Context) error {
	cmd, err := p.build(ctx)
	if err != nil {
		return err
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
	p.out.src.Reset(stdout)
	return p.stdioRPC.Start(ctx)
}

// Close ends the requests waiting and stdin, then the child: it has
// stdioGraceful to exit on its own, then gets SIGTERM, then SIGKILL; then
// what is left of its process tree gets the same (childproc).
func (p *stdioProcess) Close() error {
	p.closeOnce.Do(func() {
		p.closeErr = p.stdioRPC.Close()
		if p.cmd == nil {
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
