// Package plugins owns out-of-process credential sources: the go-plugin
// gRPC protocol (sub-package proto), the host-side Source that runs a
// plugin executable and implements bindings.Source, the author SDK
// (sub-package sdk), the conformance test kit (plugintest) and the example
// plugins under cmd/.
//
// A Source starts its plugin lazily on the first Resolve and keeps it
// running. Every start reads the executable once into a private sealed copy
// (a memfd on Linux), checks the copy's SHA-256 against the pin and executes
// that copy, so the bytes checked are the bytes that run. It negotiates
// gRPC over AutoMTLS, gives the plugin only the environment in
// Options.Env, and runs it in its own session so that stopping it (Close, a
// crash, or the host dying) takes its whole process tree along. A crashed
// plugin is restarted on the next call, with exponential back-off and a
// circuit breaker against crash loops. Everything the plugin logs reaches
// the host logger only after known secret values are masked.
package plugins

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/plugins/internal/wire"
	"github.com/agenthost/agenthost/plugins/sdk"
)

// Source runs one credential plugin executable and resolves values through
// it. It is safe for concurrent use. Close it to stop the plugin.
type Source struct {
	opts      Options
	gate      *logGate
	log       hclog.Logger // redacting; lifecycle events
	pluginLog hclog.Logger // redacting; the plugin's own lines
	goPlugin  hclog.Logger // redacting; go-plugin's internals
	socketDir string

	mu        sync.Mutex
	closed    bool
	inst      *instance
	flight    *startFlight
	launching *processRunner
	failures  int // consecutive failed starts and crashes
	// startedOnce: the plugin ran before, so the next start is a restart.
	startedOnce bool
	lastFailure error
	nextStart   time.Time
	openUntil   time.Time

	// bg tracks the goroutines the Source owns (starts, exit watchers,
	// stops of broken instances). Add only under mu while !closed.
	bg sync.WaitGroup
}

var _ bindings.Source = (*Source)(nil)

type instance struct {
	client   *plugin.Client
	rpc      *wire.Client
	runner   *processRunner
	info     sdk.Info
	broken   atomic.Bool
	stopping atomic.Bool
	stopOnce sync.Once
	// output are the writers of the plugin's forwarded stdout and stderr;
	// closed after the process is gone to flush a final partial line.
	output []io.Closer
}

// stop kills the plugin (gracefully first, as go-plugin does) and removes
// its socket directory. Concurrent callers wait for the first.
func (i *instance) stop() {
	i.stopping.Store(true)
	i.stopOnce.Do(func() {
		i.client.Kill()
		for _, c := range i.output {
			_ = c.Close()
		}
	})
}

type startFlight struct {
	done chan struct{}
	err  error
}

// NewSource checks opts (including the checksum pin) and returns a Source.
// The plugin is not started until the first Resolve or Describe.
func NewSource(opts Options) (*Source, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	sum, err := FileChecksum(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("plugins: plugin %s: %w: %w", opts.Name, ErrChecksum, err)
	}
	if subtle.ConstantTimeCompare(sum, opts.Checksum) != 1 {
		return nil, fmt.Errorf("plugins: plugin %s: %w: %s has sha256:%x but the config pins sha256:%x; it was not executed",
			opts.Name, ErrChecksum, opts.Path, sum, opts.Checksum)
	}
	socketDir, err := os.MkdirTemp(opts.SocketDir, "ahp-")
	if err != nil {
		return nil, fmt.Errorf("plugins: plugin %s: socket directory: %w", opts.Name, err)
	}
	// go-plugin puts sockets two levels further down; a unix socket path
	// must fit in sun_path (108 bytes on Linux) or the plugin cannot listen.
	if len(socketDir)+socketPathOverhead >= maxSocketPath {
		_ = os.RemoveAll(socketDir)
		return nil, fmt.Errorf("plugins: plugin %s: socket directory %s is too long for unix socket paths (keep Options.SocketDir under %d bytes)",
			opts.Name, opts.SocketDir, maxSocketPath-socketPathOverhead-len("/ahp-0000000000"))
	}
	gate := newLogGate(opts.Redactor)
	base := newRedactingLogger(opts.Logger.With("plugin", opts.Name), gate)
	s := &Source{
		opts:      opts,
		gate:      gate,
		log:       base,
		pluginLog: base.With("stream", "stderr"),
		socketDir: socketDir,
	}
	// go-plugin forwards plugin stderr to a sub-logger named after the
	// executable. The Source reads stderr itself (to keep a tail and to
	// withhold overlong lines whole), so that sub-logger is muted.
	s.goPlugin = &mutingLogger{Logger: base, mute: filepath.Base(opts.Path)}
	gate.notice = func(n int) {
		opts.Logger.Warn("plugin log lines dropped while calls were in flight", "plugin", opts.Name, "dropped", n)
	}
	return s, nil
}

// Name is the plugin's name from Options.
func (s *Source) Name() string { return s.opts.Name }

// Describe starts the plugin if needed and returns what it reported about
// itself at start.
func (s *Source) Describe(ctx context.Context) (sdk.Info, error) {
	inst, err := s.acquire(ctx)
	if err != nil {
		return sdk.Info{}, err
	}
	return inst.info, nil
}

// Resolve implements bindings.Source. It starts the plugin if needed and
// bounds the call by Options.CallTimeout. Non-public values are added to
// the Redactor before Resolve returns.
func (s *Source) Resolve(ctx context.Context, req bindings.Request) (bindings.Resolved, error) {
	inst, err := s.acquire(ctx)
	if err != nil {
		return bindings.Resolved{}, err
	}
	callCtx, cancel := context.WithTimeout(ctx, s.opts.CallTimeout)
	defer cancel()
	// Lines the plugin logs during the call are held until its value is
	// registered with the redactor (see logGate).
	ticket := s.gate.begin()
	defer s.gate.end(ticket)

	began := time.Now()
	res, err := inst.rpc.Resolve(callCtx, req)
	if err != nil {
		return bindings.Resolved{}, s.callError(ctx, callCtx, inst, req.Ref, err)
	}
	if res.Sensitivity != bindings.Public {
		s.opts.Redactor.Add(res.Value)
	}
	s.callSucceeded()
	s.log.Trace("resolved", "ref", req.Ref, "server", req.Server, "tool", req.Tool, "param", req.Param,
		"expires", !res.Expiry.IsZero(), "took", time.Since(began))
	return res, nil
}

// Close stops the plugin and its process tree, waits for the Source's
// goroutines and removes its socket directory. Calls in flight fail with
// ErrClosed. Close is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	inst, launching := s.inst, s.launching
	s.inst = nil
	s.mu.Unlock()

	if launching != nil {
		_ = launching.Kill(context.Background())
	}
	if inst != nil {
		inst.stop()
	}
	s.bg.Wait()
	s.gate.flush()
	if err := os.RemoveAll(s.socketDir); err != nil {
		return fmt.Errorf("plugins: plugin %s: remove socket directory: %w", s.opts.Name, err)
	}
	return nil
}

// acquire returns the running instance, starting one if needed. Concurrent
// callers share one start; each waits only as long as its own ctx allows.
func (s *Source) acquire(ctx context.Context) (*instance, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, fmt.Errorf("plugin %s: %w", s.opts.Name, ErrClosed)
		}
		if inst := s.inst; inst != nil {
			s.mu.Unlock()
			return inst, nil
		}
		if f := s.flight; f != nil {
			s.mu.Unlock()
			select {
			case <-f.done:
				if f.err != nil {
					return nil, f.err
				}
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("plugin %s: waiting for start: %w", s.opts.Name, ctx.Err())
			}
		}
		now := time.Now()
		if now.Before(s.openUntil) {
			err := fmt.Errorf("plugin %s: %w for another %s after %d consecutive failures; last failure: %w",
				s.opts.Name, ErrCircuitOpen, s.openUntil.Sub(now).Round(time.Millisecond), s.failures, s.lastFailure)
			s.mu.Unlock()
			return nil, err
		}
		if wait := s.nextStart.Sub(now); wait > 0 {
			last := s.lastFailure
			s.mu.Unlock()
			if dl, ok := ctx.Deadline(); ok && dl.Before(now.Add(wait)) {
				return nil, fmt.Errorf("plugin %s: %w: next start allowed in %s; last failure: %w",
					s.opts.Name, ErrRestartBackoff, wait.Round(time.Millisecond), last)
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				return nil, fmt.Errorf("plugin %s: waiting for restart: %w", s.opts.Name, ctx.Err())
			}
		}
		f := &startFlight{done: make(chan struct{})}
		s.flight = f
		s.bg.Add(1)
		go s.runStart(f)
		s.mu.Unlock()
	}
}

// runStart performs one start for the callers waiting on f. It does not
// use any caller's context: one caller giving up must not abort the start
// the others are waiting for. Options.StartTimeout bounds it.
func (s *Source) runStart(f *startFlight) {
	defer s.bg.Done()
	inst, err := s.launch()

	s.mu.Lock()
	s.flight = nil
	s.launching = nil
	switch {
	case s.closed:
		// Close may have killed this very start; that is not a failure.
		if err == nil {
			defer inst.stop()
		}
		err = fmt.Errorf("plugin %s: %w", s.opts.Name, ErrClosed)
	case err == nil:
		s.inst = inst
		s.bg.Add(1)
		go s.watch(inst)
		if s.startedOnce && s.opts.OnRestart != nil {
			defer s.opts.OnRestart() // after the unlock below
		}
		s.startedOnce = true
	default:
		s.recordFailureLocked(err)
	}
	f.err = err
	close(f.done)
	s.mu.Unlock()
}

// watch notices the plugin exiting on its own, so the next call restarts
// it instead of failing against a dead connection.
func (s *Source) watch(inst *instance) {
	defer s.bg.Done()
	<-inst.runner.exited
	if inst.stopping.Load() {
		return
	}
	s.markBroken(inst, fmt.Errorf("plugin %s: %w (process exited)", s.opts.Name, ErrPluginExited))
	s.log.Warn("plugin exited unexpectedly", "pid", inst.runner.ID())
}

// markBroken retires inst after a crash or a broken connection: the next
// call starts a new process (after back-off).
func (s *Source) markBroken(inst *instance, cause error) {
	if !inst.broken.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	if s.inst == inst {
		s.inst = nil
		s.recordFailureLocked(cause)
	}
	if s.closed {
		// Close took (and stops) the current instance; this one was not it.
		s.mu.Unlock()
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		inst.stop()
	}()
}

// recordFailureLocked counts a failed start or a crash and schedules the
// next allowed start; enough of them in a row open the breaker.
func (s *Source) recordFailureLocked(err error) {
	s.failures++
	s.lastFailure = err
	now := time.Now()
	delay := s.opts.RestartBackoff
	for i := 1; i < s.failures && delay < s.opts.MaxRestartBackoff; i++ {
		delay *= 2
	}
	delay = min(delay, s.opts.MaxRestartBackoff)
	s.nextStart = now.Add(delay)
	if s.failures >= s.opts.BreakerThreshold {
		s.openUntil = now.Add(s.opts.BreakerCooldown)
		s.nextStart = s.openUntil
		s.log.Error("plugin circuit breaker open", "failures", s.failures, "cooldown", s.opts.BreakerCooldown, "error", err)
		return
	}
	s.log.Warn("plugin failure; restart scheduled", "failures", s.failures, "retry_in", delay, "error", err)
}

// callSucceeded resets the failure count: the plugin answered a Resolve,
// so whatever went wrong before is over.
func (s *Source) callSucceeded() {
	s.mu.Lock()
	s.failures = 0
	s.lastFailure = nil
	s.mu.Unlock()
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// callError turns a failed Resolve RPC into an error callers can branch
// on. Messages from the plugin are redacted and capped.
func (s *Source) callError(ctx, callCtx context.Context, inst *instance, ref string, err error) error {
	prefix := fmt.Sprintf("plugin %s: resolve %q", s.opts.Name, ref)
	switch {
	case s.isClosed():
		return fmt.Errorf("%s: %w", prefix, ErrClosed)
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", prefix, ctx.Err())
	case deadlinePassed(ctx):
		// The answer beat the caller's own deadline timer by a hair.
		return fmt.Errorf("%s: %w", prefix, context.DeadlineExceeded)
	case callCtx.Err() != nil || deadlinePassed(callCtx):
		return fmt.Errorf("%s: %w after %s: %w", prefix, ErrCallTimeout, s.opts.CallTimeout, context.DeadlineExceeded)
	}
	st := status.Convert(err)
	msg := s.redactMessage(st.Message())
	switch {
	case st.Code() == codes.Unavailable:
		s.markBroken(inst, fmt.Errorf("plugin %s: %w: %s", s.opts.Name, ErrPluginExited, msg))
		return fmt.Errorf("%s: %w; it will be restarted on the next call", prefix, ErrPluginExited)
	case inst.broken.Load():
		// Another call found the plugin dead and closed this connection.
		return fmt.Errorf("%s: %w; it will be restarted on the next call", prefix, ErrPluginExited)
	}
	switch st.Code() {
	case codes.NotFound:
		s.callSucceeded()
		if detail := unknownRefDetail(msg, ref); detail != "" {
			return fmt.Errorf("%s: %w: %s", prefix, ErrUnknownRef, detail)
		}
		return fmt.Errorf("%s: %w", prefix, ErrUnknownRef)
	default:
		s.callSucceeded()
		return fmt.Errorf("%s: %w: %s (%s)", prefix, ErrPlugin, msg, st.Code())
	}
}

// unknownRefDetail is what a plugin's unknown-ref message adds to the
// host's own "resolve REF: unknown ref": the SDK's message wraps
// sdk.ErrUnknownRef, so it starts with the sentinel's text and often the
// quoted ref, which would otherwise be said twice ("unknown ref: unknown
// ref ...").
func unknownRefDetail(msg, ref string) string {
	rest := strings.TrimSpace(msg)
	if after, ok := strings.CutPrefix(rest, ErrUnknownRef.Error()); ok {
		rest = strings.TrimSpace(after)
	}
	if after, ok := strings.CutPrefix(rest, fmt.Sprintf("%q", ref)); ok {
		rest = strings.TrimSpace(after)
	}
	return strings.TrimSpace(strings.TrimPrefix(rest, ":"))
}

func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// maxResponseSize bounds one gRPC message from the plugin.
const maxResponseSize = 4 << 20

// maxMessageLen caps plugin-supplied text in host errors.
const maxMessageLen = 512

func (s *Source) redactMessage(msg string) string {
	msg = s.opts.Redactor.Redact(msg)
	if len(msg) > maxMessageLen {
		msg = msg[:maxMessageLen] + "...(truncated)"
	}
	return msg
}

const (
	maxSocketPath = 108
	// socketPathOverhead is what go-plugin appends below the per-Source
	// directory: "/plugin-dirNNNNNNNNNN/pluginNNNNNNNNNN".
	socketPathOverhead = len("/plugin-dir0000000000/plugin0000000000")
)

// handshakeDiagnosis is what go-plugin appends when the first stdout line
// is not a handshake.
const handshakeDiagnosis = "agenthost credential plugins must call sdk.Serve (or serve the go-plugin gRPC protocol) and must not print to stdout before it"

// launch starts one plugin process and brings it to the configured state.
func (s *Source) launch() (*instance, error) {
	deadline := time.Now().Add(s.opts.StartTimeout)
	tail := &stderrTail{}
	stderr := &lineWriter{line: func(line string) {
		level, msg, args := parseLogLine(line)
		// A failed start quotes the tail to the operator: the plugin's
		// own structured debug lines (go-plugin's mTLS and address chatter
		// among them) are no explanation, and stay in the log only.
		if !strings.HasPrefix(line, "{") || level > hclog.Debug {
			tail.add(line)
		}
		s.pluginLog.Log(level, msg, args...)
	}}
	syncStderr := &lineWriter{line: func(line string) {
		tail.add(line)
		s.pluginLog.Log(inferLevel(line), line)
	}}
	syncStdout := &lineWriter{line: func(line string) { s.pluginLog.Log(hclog.Debug, line, "stream", "stdout") }}

	var proc *processRunner
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.PluginSet(nil),
		RunnerFunc:       func(_ hclog.Logger, spec *exec.Cmd, _ string) (runner.Runner, error) { return s.newRunner(spec, &proc) },
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		StartTimeout:     s.opts.StartTimeout,
		Logger:           s.goPlugin,
		Stderr:           stderr,
		SyncStdout:       syncStdout,
		SyncStderr:       syncStderr,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: s.socketDir},
		// go-plugin allows 2 GiB responses; a credential is tiny, and a
		// misbehaving plugin must not be able to balloon host memory.
		GRPCDialOptions: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponseSize))},
	})
	fail := func(err error) (*instance, error) {
		// Kill waits for go-plugin's pipe readers, so the stderr tail is
		// complete before the error is built from it.
		client.Kill()
		syncStderr.Close()
		return nil, s.startError(err, tail)
	}

	protocol, err := client.Client()
	if err != nil {
		return fail(err)
	}
	raw, err := protocol.Dispense(wire.PluginName)
	if err != nil {
		return fail(err)
	}
	rpc, ok := raw.(*wire.Client)
	if !ok {
		return fail(fmt.Errorf("dispensed %T, want *wire.Client", raw))
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	info, err := rpc.Describe(ctx)
	if err != nil {
		return fail(&rpcStartError{op: "Describe", err: err})
	}
	if err := rpc.Configure(ctx, s.opts.Config); err != nil {
		return fail(&rpcStartError{op: "Configure", err: err})
	}
	s.log.Debug("plugin started", "pid", proc.ID(), "name", info.Name, "version", info.Version)
	return &instance{
		client: client,
		rpc:    rpc,
		runner: proc,
		info:   sdk.Info{Name: info.Name, Version: info.Version, ConfigSchema: info.ConfigSchema},
		output: []io.Closer{syncStderr, syncStdout},
	}, nil
}

// newRunner is go-plugin's RunnerFunc. go-plugin does not apply
// SecureConfig when a RunnerFunc is set (it would check spec.Path, which is
// empty), and a check by path could not hold anyway: the file could change
// between the check and the exec. So the executable is read once into a
// private sealed copy, hashed as it is read, and that copy is what runs, on
// every start.
func (s *Source) newRunner(spec *exec.Cmd, out **processRunner) (runner.Runner, error) {
	exe, err := childproc.OpenPinned(s.opts.Path, s.opts.Checksum, childproc.PinOptions{TmpDir: s.socketDir, Portable: usePrivateCopy})
	if err != nil {
		return nil, err
	}
	if s.opts.beforeExec != nil {
		s.opts.beforeExec()
	}
	// The plugin sees its configured path as argv[0], not the copy's.
	cmd := exec.Command(s.opts.Path, s.opts.Args...)
	if err := exe.Apply(cmd); err != nil {
		exe.Close()
		return nil, err
	}
	// spec.Env holds only go-plugin's variables (cookie, protocol versions,
	// client certificate, socket dir): SkipHostEnv keeps the host's out.
	cmd.Env = append(append([]string(nil), s.opts.Env...), spec.Env...)
	r, err := newProcessRunner(cmd, handshakeDiagnosis, exe.Close, s.opts.Supervisor, s.sandbox())
	if err != nil {
		exe.Close()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		exe.Close()
		return nil, fmt.Errorf("plugin %s: %w", s.opts.Name, ErrClosed)
	}
	s.launching = r
	*out = r
	return r, nil
}

// sandbox is the plugin's sandbox with its socket directory writable (nil
// when it has none).
func (s *Source) sandbox() *childproc.Sandbox {
	if s.opts.Sandbox == nil {
		return nil
	}
	sb := *s.opts.Sandbox
	sb.Write = append(slices.Clone(sb.Write), s.socketDir)
	return &sb
}

// usePrivateCopy makes newRunner skip the memfd (tests of the portable
// pinned copy on Linux).
var usePrivateCopy = false

type rpcStartError struct {
	op  string
	err error
}

func (e *rpcStartError) Error() string { return e.op + ": " + e.err.Error() }
func (e *rpcStartError) Unwrap() error { return e.err }

// startError classifies a failed start. go-plugin reports most handshake
// problems only as text, so some cases match its (stable) messages.
func (s *Source) startError(err error, tail *stderrTail) error {
	se := &StartError{Plugin: s.opts.Name, StderrTail: tail.redacted(s.opts.Redactor)}
	msg := err.Error()
	var readErr *childproc.PinReadError
	var rpcErr *rpcStartError
	var mismatch *childproc.PinMismatchError
	switch {
	case errors.Is(err, ErrClosed):
		return err
	case errors.As(err, &mismatch):
		se.Reason = ErrChecksum
		se.Detail = fmt.Sprintf("the SHA-256 of %s does not match the configured pin; it was not executed", s.opts.Path)
	case errors.As(err, &readErr):
		se.Reason = ErrChecksum
		se.Detail = s.redactMessage(readErr.Error())
	case errors.As(err, &rpcErr):
		st := status.Convert(rpcErr.err)
		switch {
		case rpcErr.op == "Configure" && st.Code() == codes.InvalidArgument:
			se.Reason = ErrConfigure
			se.Detail = s.redactMessage(st.Message())
		case st.Code() == codes.DeadlineExceeded:
			se.Reason = ErrStartTimeout
			se.Detail = fmt.Sprintf("%s did not answer within the %s start timeout", rpcErr.op, s.opts.StartTimeout)
		default:
			se.Reason = ErrStart
			se.Detail = fmt.Sprintf("%s failed: %s (%s)", rpcErr.op, s.redactMessage(st.Message()), st.Code())
		}
	case tail.contains("This binary is a plugin"):
		// go-plugin's Serve prints this and exits when the cookie in its
		// environment is not the one it was built with.
		se.Reason = fmt.Errorf("%w: %w", ErrHandshake, ErrMagicCookie)
		se.Detail = "the plugin exited because it did not recognise the host's magic cookie: it was built for a different host or protocol, or it is not an agenthost credential plugin"
	case strings.HasPrefix(msg, "Unrecognized remote plugin message: "):
		line, _, _ := strings.Cut(strings.TrimPrefix(msg, "Unrecognized remote plugin message: "), "\n")
		if line == "" {
			se.Reason = ErrStart
			se.Detail = "the plugin exited (or closed stdout) before completing the go-plugin handshake"
			break
		}
		if len(line) > 120 {
			line = line[:120] + "..."
		}
		se.Reason = ErrHandshake
		se.Detail = fmt.Sprintf("the plugin printed %q to stdout before the go-plugin handshake line; stdout is reserved for the handshake, so a plugin must not print to it before Serve (log to stderr instead)",
			s.opts.Redactor.Redact(line))
	case strings.Contains(msg, "incompatible API version"):
		se.Reason = fmt.Errorf("%w: %w", ErrHandshake, ErrProtocolVersion)
		se.Detail = fmt.Sprintf("this host speaks credential protocol version %d (%s); rebuild the plugin against a matching agenthost SDK", wire.ProtocolVersion, msg)
	case strings.Contains(msg, "incompatible core API version"):
		se.Reason = fmt.Errorf("%w: %w", ErrHandshake, ErrProtocolVersion)
		se.Detail = "the plugin was built with an incompatible go-plugin core protocol"
	case strings.Contains(msg, "unsupported plugin protocol"):
		se.Reason = ErrHandshake
		se.Detail = "the plugin does not serve gRPC; agenthost accepts gRPC plugins only"
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		se.Reason = ErrStartTimeout
		se.Detail = fmt.Sprintf("no handshake within %s", s.opts.StartTimeout)
	case sandboxRefusal(err, msg) != nil:
		// The sandbox could not be applied (no supervisor, or a kernel
		// without what it asks for): the plugin was not started.
		se.Reason = fmt.Errorf("%w: %w", ErrStart, sandboxRefusal(err, msg))
		se.Detail = s.redactMessage(msg)
	case strings.Contains(msg, "plugin exited before we could connect"):
		se.Reason = ErrStart
		se.Detail = "the plugin exited before completing the go-plugin handshake"
	default:
		se.Reason = ErrStart
		se.Detail = s.redactMessage(msg)
	}
	return se
}

// sandboxRefusal is the childproc sentinel of a start refused because the
// plugin's sandbox cannot be applied, or nil. go-plugin passes the runner's
// error on as text, so the message is checked too.
func sandboxRefusal(err error, msg string) error {
	for _, sentinel := range []error{childproc.ErrNoSupervisor, childproc.ErrSandboxUnavailable} {
		if errors.Is(err, sentinel) || strings.Contains(msg, sentinel.Error()) {
			return sentinel
		}
	}
	return nil
}

// mutingLogger silences the one sub-logger go-plugin uses to forward
// plugin stderr (the Source reads stderr itself) and passes everything
// else through.
type mutingLogger struct {
	hclog.Logger
	mute string
}

func (l *mutingLogger) Named(name string) hclog.Logger {
	if name == l.mute {
		return hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	}
	return l.Logger.Named(name)
}
