//go:build linux

package childproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// Spawner is one long-lived supervisor process (proctree.Serve), started at
// its first Start and kept for the host's life: it spawns every child asked
// of it, each in a session of its own, is the subreaper of all their trees,
// ends a child's tree when the child exits, and every tree when the host
// dies (its socket's EOF, its parent-death SIGTERM). A child costs it a
// fork and an exec of the child itself: no second exec.
type Spawner struct {
	path string

	once  sync.Once
	err   error
	sock  int
	max   int // the largest message sock sends (proctree.MaxMessage at most)
	proc  *os.Process
	gone  chan struct{} // closed when the supervisor's socket ended
	mu    sync.Mutex
	next  uint64
	child map[string]*Spawned
}

const spawnerSupported = true

// StartCmd starts cmd (unstarted) through the spawner, with stdin, stdout
// and stderr: its Path, Args, environment (cmd.Environ), Dir (the host's
// working directory when empty) and ExtraFiles are what the child gets.
func (s *Spawner) StartCmd(cmd *exec.Cmd, stdin, stdout, stderr *os.File) (*Spawned, error) {
	if cmd.Err != nil {
		return nil, cmd.Err
	}
	files := append([]*os.File{stdin, stdout, stderr}, cmd.ExtraFiles...)
	dir := cmd.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	return s.Start(cmd.Path, cmd.Args, cmd.Environ(), dir, files)
}

// NewSpawner is the long-lived supervisor run from path, a binary whose
// main imports internal/childproc/supervisor (or calls MaybeSupervise).
func NewSpawner(path string) *Spawner { return &Spawner{path: path} }

// Spawned is a child the supervisor started.
type Spawned struct {
	Pid     int
	id      string
	sp      *Spawner
	started chan error
	exited  chan struct{}
	status  int
}

// Prestart starts the supervisor now, without waiting for it, so that
// its start (an exec of the program and its initializers, a few
// milliseconds) overlaps the caller's own setup instead of holding up the
// first Start, which otherwise forks it and then waits for it to come up
// before its child can be spawned (docs/PERFORMANCE.md, "The supervisor
// started before connect"). The supervisor is the one Start would start:
// the same attributes (its own session, the parent-death signal of a
// thread kept for the host's life), so the trees still end with the host
// and no child reaches the host's terminal. An error starting it is
// Start's error. Call it only where a child will be started: an unused
// supervisor costs its start.
func (s *Spawner) Prestart() {
	go func() { _ = s.start() }()
}

// start starts the supervisor, once. The goroutine that forks it keeps
// its thread for the process's life (the supervisor's parent-death signal
// follows that thread) and reads the supervisor's messages.
func (s *Spawner) start() error {
	s.once.Do(func() {
		fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			s.err = fmt.Errorf("supervisor socket: %w", err)
			return
		}
		s.sock, s.child, s.gone = fds[0], map[string]*Spawned{}, make(chan struct{})
		s.max = messageLimit(s.sock)
		theirs := os.NewFile(uintptr(fds[1]), "supervisor")
		started := make(chan error, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the host
			null, err := os.Open(os.DevNull)
			if err == nil {
				s.proc, err = os.StartProcess(s.path, []string{s.path, proctree.Arg, proctree.ServeArg}, &os.ProcAttr{
					Files: []*os.File{null, null, os.Stderr, theirs},
					Sys:   &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGTERM},
				})
				_ = null.Close()
			}
			_ = theirs.Close()
			started <- err
			if err != nil {
				return
			}
			s.read()
		}()
		if err := <-started; err != nil {
			s.err = fmt.Errorf("start the supervisor: %w", err)
		}
	})
	return s.err
}

// read dispatches the supervisor's messages until its socket ends; then
// every child waiting hears that it is gone.
func (s *Spawner) read() {
	buf := make([]byte, proctree.MaxMessage)
	for {
		n, _, _, _, err := syscall.Recvmsg(s.sock, buf, nil, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || n == 0 {
			break
		}
		parts := strings.SplitN(string(buf[:n]), "\x00", 3)
		if len(parts) != 3 || len(parts[0]) != 1 {
			continue
		}
		s.mu.Lock()
		c := s.child[parts[1]]
		if parts[0][0] != proctree.MsgStarted {
			delete(s.child, parts[1])
		}
		s.mu.Unlock()
		if c == nil {
			continue
		}
		switch parts[0][0] {
		case proctree.MsgStarted:
			c.Pid, _ = strconv.Atoi(parts[2])
			c.started <- nil
		case proctree.MsgFailed:
			c.started <- errors.New(parts[2])
		case proctree.MsgExited:
			c.status, _ = strconv.Atoi(parts[2])
			close(c.exited)
		}
	}
	close(s.gone)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, c := range s.child {
		delete(s.child, id)
		select {
		case c.started <- ErrSupervisorGone:
		default:
		}
		c.status = -1
		close(c.exited)
	}
}

// Start has the supervisor run path with argv (argv[0] included), env and
// dir, files as its stdin, stdout, stderr and descriptors from 3 on; the
// files are the caller's to close once Start returns.
func (s *Spawner) Start(path string, argv, env []string, dir string, files []*os.File) (*Spawned, error) {
	if err := s.start(); err != nil {
		return nil, err
	}
	if len(files) < 3 || len(argv) == 0 {
		return nil, errors.New("spawn: want stdin, stdout, stderr and an argv")
	}
	s.mu.Lock()
	s.next++
	c := &Spawned{id: strconv.FormatUint(s.next, 10), sp: s, started: make(chan error, 1), exited: make(chan struct{})}
	s.child[c.id] = c
	s.mu.Unlock()
	fields := append([]string{string(proctree.MsgSpawn), c.id, path, dir, strconv.Itoa(len(argv))}, argv...)
	fields = append(fields, env...)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	msg := strings.Join(fields, "\x00")
	if len(msg) > s.max {
		s.forget(c)
		return nil, fmt.Errorf("%w: arguments %s, environment %s, at most %s together", ErrSpawnTooLarge,
			messageSize(argv), messageSize(env), byteCount(s.max))
	}
	if err := syscall.Sendmsg(s.sock, []byte(msg), syscall.UnixRights(fds...), nil, 0); err != nil {
		s.forget(c)
		return nil, fmt.Errorf("spawn: %w", err)
	}
	runtime.KeepAlive(files)
	if err := <-c.started; err != nil {
		return nil, fmt.Errorf("fork/exec %s: %w", path, err)
	}
	return c, nil
}

// messageLimit is the largest message sock sends: proctree.MaxMessage,
// its send buffer raised for it. A datagram must fit the send buffer (less
// 32 bytes), whose default, net.core.wmem_default, is 212,992 bytes: a
// request between that and MaxMessage failed with EMSGSIZE. Where
// net.core.wmem_max keeps the buffer smaller, the limit is what it allows.
func messageLimit(sock int) int {
	_ = syscall.SetsockoptInt(sock, syscall.SOL_SOCKET, syscall.SO_SNDBUF, proctree.MaxMessage)
	buf, err := syscall.GetsockoptInt(sock, syscall.SOL_SOCKET, syscall.SO_SNDBUF)
	if err != nil || buf-32 >= proctree.MaxMessage {
		return proctree.MaxMessage
	}
	return buf - 32
}

// messageSize is the bytes fields take in a spawn message, with their NULs.
func messageSize(fields []string) string {
	n := 0
	for _, f := range fields {
		n += len(f) + 1
	}
	return byteCount(n)
}

// byteCount is n for a person: bytes below 1 KiB, else KiB (rounded up).
func byteCount(n int) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d KiB", (n+1<<10-1)>>10)
}

func (s *Spawner) forget(c *Spawned) {
	s.mu.Lock()
	delete(s.child, c.id)
	s.mu.Unlock()
}

// Wait waits for the child to exit and returns its status (128+signal for
// a signal; -1 when the supervisor ended first).
func (c *Spawned) Wait() int {
	<-c.exited
	return c.status
}

// Exited is closed once the child has exited (and its tree was ended).
func (c *Spawned) Exited() <-chan struct{} { return c.exited }

// Signal sends sig to the child.
func (c *Spawned) Signal(sig syscall.Signal) error {
	return c.send(proctree.MsgSignal, strconv.Itoa(int(sig)))
}

// Terminate has the supervisor end the child's whole tree: SIGTERM, a
// grace period, SIGKILL.
func (c *Spawned) Terminate() error { return c.send(proctree.MsgTerminate, "") }

func (c *Spawned) send(kind byte, value string) error {
	select {
	case <-c.exited:
		return os.ErrProcessDone
	default:
	}
	msg := string(kind) + "\x00" + c.id
	if kind != proctree.MsgTerminate {
		msg += "\x00" + value
	}
	return syscall.Sendmsg(c.sp.sock, []byte(msg), nil, nil, 0)
}
