package mcpconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"syscall"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/httpguard"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/serverreq"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/stdiorpc"
	"github.com/agenthost/agenthost/host/internal/mcpconn/internal/wirecheck"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/internal/httpredirect"
)

// newTransport builds the inner mcp-go transport for the server's config.
// Its reads are bounded by limits.maxResponseBytes, and messages that are
// not JSON-RPC fail the requests in pending.
func (c *Conn) newTransport(pending *wirecheck.Pending, requests *serverreq.Requests) (transport.Interface, error) {
	if c.transport != nil {
		tr, err := c.transport()
		if err != nil {
			return nil, fmt.Errorf("transport: %w", err)
		}
		if tr == nil {
			return nil, errors.New("transport: the factory returned none")
		}
		return tr, nil
	}
	switch c.cfg.Type {
	case config.TransportStdio, "":
		if c.cfg.Command == "" {
			return nil, errors.New("no command configured")
		}
		return stdiorpc.NewProcess(stdiorpc.Options{
			Build: func(ctx context.Context) (*exec.Cmd, *childproc.Spawner, error) {
				cmd, err := c.command(ctx, c.cfg.Command, nil, c.cfg.Args)
				if err != nil || c.sandbox.Enforced() || cmd.SysProcAttr != nil {
					return cmd, nil, err
				}
				return cmd, c.supervisor.Spawner(), nil
			},
			MaxLine: c.maxResponseBytes, Fail: pending.FailAll,
			Requests: requests, AdmitCtx: c.life, Logger: c.logger,
		}), nil
	case config.TransportHTTP:
		return transport.NewStreamableHTTP(c.cfg.URL,
			transport.WithHTTPHeaders(c.cfg.Headers),
			transport.WithHTTPLogger(slog.New(httpguard.QuietListening{Handler: c.logger.Handler()})),
			transport.WithHTTPBasicClient(c.httpClient(pending.FailAll, requests)),
			// The GET stream of the 2025-11-25 era (see httpguard's legacy.go).
			//lint:ignore SA1019 deprecated for the 2026-07-28 era only, where mcp-go leaves it closed
			transport.WithContinuousListening(),
		)
	case config.TransportSSE:
		return transport.NewSSE(c.cfg.URL,
			transport.WithHeaders(c.cfg.Headers),
			transport.WithSSELogger(c.logger),
			transport.WithHTTPClient(c.httpClient(pending.FailAll, requests)),
		)
	default:
		return nil, fmt.Errorf("unknown transport type %q", c.cfg.Type)
	}
}

// httpClient is the client of one HTTP server connection. Go's default
// keeps two idle connections per host: with many sessions calling one
// server at once, almost every call would open (and leave in TIME_WAIT) a
// new TCP connection. No overall timeout: responses may stream; calls are
// bounded by their context (callTimeout). Redirects follow the one
// policy (internal/httpredirect): within the configured URL's origin,
// with every hop admitted; the configured headers go nowhere else.
// requests bounds what the server asks of the host in its answers.
func (c *Conn) httpClient(failAll func(*wirecheck.ProtocolError), requests *serverreq.Requests) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Requests beyond MaxConnsPerHost wait for a free connection instead of
	// dialing (and later closing) one each: under a burst of sessions that
	// is both faster and kinder to the server.
	t.MaxConnsPerHost = 64
	t.MaxIdleConnsPerHost = 64
	t.MaxIdleConns = 256
	var base http.RoundTripper = t
	if c.wrapHTTP != nil {
		base = c.wrapHTTP(t)
	}
	return httpredirect.NewClient(&httpguard.Transport{Base: base, Max: c.maxResponseBytes, FailAll: failAll, Requests: requests}, c.redirects)
}

// command builds the stdio child with an explicit environment: only the
// configured env plus a few basics (childproc.Env). The host's own
// environment (API keys, plugin secrets) never leaks into servers. The
// server leads a session of its own so that its whole tree can be ended;
// with a supervisor, the supervisor leads it and ends the tree even when
// the host is SIGKILLed. The file that runs is the one the command names
// by childproc.LookPath's rule (relative to cwd, a bare name in PATH);
// under a managed allowlist the file admit returns, checked at this start
// (argv[0] stays the command as written).
func (c *Conn) command(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
	path, err := childproc.LookPath(command, c.cfg.Cwd)
	switch {
	case c.admit != nil && err != nil:
		return nil, fmt.Errorf("failed to start command: %w", err)
	case c.admit != nil:
		if path, err = c.admit(path); err != nil {
			return nil, err
		}
	case err != nil:
		path = command // exec reports it, by the name configured
	}
	cmd := exec.Command(path, args...)
	cmd.Args[0] = command
	cmd.Env = childproc.Env(os.Getenv, c.cfg.Env)
	cmd.Dir = c.cfg.Cwd
	if c.sandbox.Enforced() {
		return cmd, c.sandboxed(cmd)
	}
	if c.supervisor != nil && childproc.Runnable(cmd) && c.supervisor.Spawner() != nil {
		// Started by the supervisor's long-lived process (no SysProcAttr:
		// it puts the child in a session of its own).
		return cmd, nil
	}
	if c.supervisor != nil && childproc.Runnable(cmd) {
		cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
		c.supervisor.Wrap(cmd)
	} else {
		cmd.SysProcAttr = childproc.Attr(syscall.SIGKILL)
	}
	return cmd, nil
}

// NewLineLogger is a writer that logs each line written to it at debug
// level, as msg with the line in "line" (a plugin's log output, say).
func NewLineLogger(logger *slog.Logger, msg string) io.Writer {
	return stdiorpc.NewLineLogger(logger, msg)
}

// sandboxEnforcement is what a server's snapshots report about its
// sandbox: nil for a server reached by url; mode off; or, under enforce,
// what this kernel enforces (a sandbox it cannot apply fails the start
// with the reason, and the report still names the ABI found).
func sandboxEnforcement(cfg *config.Server, sb config.Sandbox) *childproc.Enforcement {
	if cfg.Command == "" {
		return nil
	}
	off := &childproc.Enforcement{Mode: childproc.ModeOff, Mechanism: "none"}
	if !sb.Enforced() {
		return off
	}
	child, err := sb.Child(cfg.Cwd)
	if err != nil || child == nil {
		return off
	}
	e, err := child.Check()
	if err != nil {
		e.Mechanism = "none"
	}
	return &e
}

// sandboxed makes cmd start under the server's sandbox, through the
// supervisor, or returns why it must not start at all: a sandboxed server
// never starts unsandboxed.
func (c *Conn) sandboxed(cmd *exec.Cmd) error {
	sb, err := c.sandbox.Child(c.cfg.Cwd)
	if err != nil {
		return fmt.Errorf("server %s: sandbox: %w", c.name, err)
	}
	if cmd.Err == nil && !childproc.Runnable(cmd) {
		return fmt.Errorf("server %s: command %q is not an executable file", c.name, c.cfg.Command)
	}
	cmd.SysProcAttr = childproc.Attr(syscall.SIGTERM)
	if _, err := c.supervisor.WrapSandboxed(cmd, sb); err != nil {
		if errors.Is(err, childproc.ErrNoSupervisor) || errors.Is(err, childproc.ErrSandboxUnavailable) {
			return fmt.Errorf("server %s not started: %w", c.name, err)
		}
		return err
	}
	return nil
}
