package plugins

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/agenthost/agenthost/internal/childproc"
)

// Redactor masks secret values in text. bindings' redactor satisfies it; the
// Source adds every non-public value it resolves.
type Redactor interface {
	Redact(string) string
	Add(string)
}

// Options configures one plugin Source. Every security knob is here; the
// zero value of each optional field is a safe default.
type Options struct {
	// Name identifies the plugin in logs and errors. Default: the base name
	// of Path.
	Name string
	// Path is the plugin executable. Required.
	Path string
	// Args are extra command-line arguments for the plugin.
	Args []string
	// Env is the plugin's environment ("KEY=VALUE"), plus only the
	// variables go-plugin itself sets (magic cookie, protocol versions,
	// AutoMTLS certificate, socket directory). The host's own environment is
	// never inherited: pass PATH here if the plugin needs it.
	Env []string
	// Checksum is the SHA-256 of the executable. Required: a mismatch
	// refuses to execute the file (ErrChecksum). See ParseChecksum.
	Checksum []byte
	// Config is sent to the plugin's Configure after every start. Nil means
	// an empty object.
	Config map[string]any

	// Logger receives lifecycle events and the plugin's own log lines, with
	// every value the Redactor knows masked. Default: discard.
	Logger hclog.Logger
	// Redactor masks values in logs and errors. Default: a private one that
	// knows the values this Source resolved.
	Redactor Redactor

	// StartTimeout bounds one start: exec, handshake, Describe, Configure.
	// Default 10s.
	StartTimeout time.Duration
	// CallTimeout bounds one Resolve. Default 10s.
	CallTimeout time.Duration
	// RestartBackoff is the wait before restarting after the first crash or
	// failed start; it doubles with each consecutive failure up to
	// MaxRestartBackoff. Defaults 100ms and 10s.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// BreakerThreshold consecutive failures (failed starts or crashes, with
	// no successful Resolve between them) open the circuit breaker: calls
	// fail fast with ErrCircuitOpen for BreakerCooldown, after which one
	// start is tried again. Defaults 5 and 30s.
	BreakerThreshold int
	BreakerCooldown  time.Duration

	// SocketDir is where the per-Source directory for go-plugin's unix
	// sockets is created (and removed on Close). Default: os.TempDir().
	SocketDir string

	// Supervisor, when set, runs the plugin under a supervisor process that
	// ends the plugin's whole process tree when the plugin exits or the host
	// dies (even by SIGKILL). Without it the plugin dies with the host (on
	// Linux) but the processes it started may not. See package childproc.
	Supervisor *childproc.Supervisor

	// Sandbox, when set, confines the plugin process and everything it
	// starts (childproc.Supervisor.WrapSandboxed): it needs Supervisor, and
	// a plugin whose sandbox cannot be applied does not start (the error
	// wraps childproc.ErrNoSupervisor or childproc.ErrSandboxUnavailable).
	// Its Write gains the plugin's socket directory (go-plugin's unix
	// socket). A plugin that runs commands (agenthost-cred-exec) passes
	// the sandbox on to them: a child inherits Landlock, seccomp and the
	// limits.
	Sandbox *childproc.Sandbox

	// OnRestart, when set, is called (on a background goroutine, without
	// arguments that could hold anything secret) each time the plugin is
	// running again after a crash or a failed start: a restart. The first
	// start is not one.
	OnRestart func()

	// beforeExec, when set, runs after the executable was read and checked
	// and before it is executed (tests swap the file there).
	beforeExec func()
}

const (
	defaultStartTimeout      = 10 * time.Second
	defaultCallTimeout       = 10 * time.Second
	defaultRestartBackoff    = 100 * time.Millisecond
	defaultMaxRestartBackoff = 10 * time.Second
	defaultBreakerThreshold  = 5
	defaultBreakerCooldown   = 30 * time.Second
)

// withDefaults validates o and fills in defaults. It also checks the
// checksum now, so a wrong pin is a configuration error at load time rather
// than at the first call; the check is repeated before every exec.
func (o Options) withDefaults() (Options, error) {
	if o.Path == "" {
		return o, errors.New("plugins: Options.Path is required")
	}
	abs, err := filepath.Abs(o.Path)
	if err != nil {
		return o, fmt.Errorf("plugins: plugin path: %w", err)
	}
	o.Path = abs
	if o.Name == "" {
		o.Name = filepath.Base(o.Path)
	}
	if len(o.Checksum) != sha256.Size {
		return o, fmt.Errorf("plugins: plugin %s: Options.Checksum must be the %d-byte SHA-256 of the executable (got %d bytes)", o.Name, sha256.Size, len(o.Checksum))
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Redactor == nil {
		o.Redactor = newValueRedactor()
	}
	setDefault(&o.StartTimeout, defaultStartTimeout)
	setDefault(&o.CallTimeout, defaultCallTimeout)
	setDefault(&o.RestartBackoff, defaultRestartBackoff)
	setDefault(&o.MaxRestartBackoff, defaultMaxRestartBackoff)
	setDefault(&o.BreakerCooldown, defaultBreakerCooldown)
	if o.BreakerThreshold <= 0 {
		o.BreakerThreshold = defaultBreakerThreshold
	}
	for _, kv := range o.Env {
		if !strings.Contains(kv, "=") {
			return o, fmt.Errorf("plugins: plugin %s: Options.Env entry %q is not KEY=VALUE", o.Name, envKey(kv))
		}
	}
	return o, nil
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// envKey returns the part of an env entry that is safe to show.
func envKey(kv string) string {
	k, _, _ := strings.Cut(kv, "=")
	if len(k) > 64 {
		k = k[:64] + "..."
	}
	return k
}

// ParseChecksum parses a SHA-256 pin written as hex, optionally prefixed
// with "sha256:" (the form config files use).
func ParseChecksum(s string) ([]byte, error) {
	h := strings.TrimPrefix(strings.TrimSpace(s), "sha256:")
	sum, err := hex.DecodeString(h)
	if err != nil || len(sum) != sha256.Size {
		return nil, fmt.Errorf("plugins: checksum must be 64 hex digits (optionally prefixed with \"sha256:\")")
	}
	return sum, nil
}

// FileChecksum returns the SHA-256 of the file at path, for tooling that
// prints the pin an operator should put in the config.
func FileChecksum(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plugins: checksum: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("plugins: checksum %s: %w", path, err)
	}
	return h.Sum(nil), nil
}
