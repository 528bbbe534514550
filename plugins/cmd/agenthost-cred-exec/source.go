//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/plugins/sdk"
)

const version = "0.1.0"

const configSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "command": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                "description": "argv of the command; the ref is appended as the last argument"},
    "timeout": {"type": "string", "description": "Go duration, default 5s, at most 5m"}
  },
  "required": ["command"],
  "additionalProperties": false
}`

const (
	defaultTimeout = 5 * time.Second
	maxTimeout     = 5 * time.Minute
	// defaultPath is used when the host passed the plugin no PATH.
	defaultPath = "/usr/local/bin:/usr/bin:/bin"
	// maxStdout bounds what a command may print; a credential is small.
	maxStdout = 1 << 20
	// maxConcurrent bounds commands running at once. The host's resolver
	// merges identical requests, so this only limits distinct ones.
	maxConcurrent = 16
	// waitDelay bounds how long a finished command's inherited pipes may
	// keep Wait from returning.
	waitDelay = time.Second
)

type execConfig struct {
	argv    []string
	timeout time.Duration
	path    string
}

type execSource struct {
	mu     sync.RWMutex
	config *execConfig
	slots  chan struct{}
}

func newExecSource() *execSource {
	return &execSource{slots: make(chan struct{}, maxConcurrent)}
}

func (s *execSource) Describe() sdk.Info {
	return sdk.Info{Name: "agenthost-cred-exec", Version: version, ConfigSchema: json.RawMessage(configSchema)}
}

func (s *execSource) Configure(_ context.Context, config map[string]any) error {
	rawArgv, _ := config["command"].([]any)
	argv := make([]string, 0, len(rawArgv))
	for _, a := range rawArgv {
		str, _ := a.(string)
		argv = append(argv, str)
	}
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("command must name a program")
	}
	timeout := defaultTimeout
	if t, ok := config["timeout"].(string); ok && t != "" {
		d, err := time.ParseDuration(t)
		if err != nil || d <= 0 || d > maxTimeout {
			return fmt.Errorf("timeout %q must be a positive Go duration of at most %s", t, maxTimeout)
		}
		timeout = d
	}
	path := os.Getenv("PATH")
	if path == "" {
		path = defaultPath
	}
	prog, err := lookPath(argv[0], path)
	if err != nil {
		return err
	}
	argv[0] = prog
	s.mu.Lock()
	s.config = &execConfig{argv: argv, timeout: timeout, path: path}
	s.mu.Unlock()
	return nil
}

// lookPath finds prog in the PATH the command will get, not in the
// plugin's own environment.
func lookPath(prog, path string) (string, error) {
	if strings.Contains(prog, "/") {
		if err := executable(prog); err != nil {
			return "", fmt.Errorf("command %s: %w", prog, err)
		}
		return filepath.Abs(prog)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		cand := filepath.Join(dir, prog)
		if executable(cand) == nil {
			return cand, nil
		}
	}
	return "", fmt.Errorf("command %q not found in PATH %s", prog, path)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

func (s *execSource) Resolve(ctx context.Context, req sdk.Request) (sdk.Result, error) {
	s.mu.RLock()
	cfg := s.config
	s.mu.RUnlock()
	if cfg == nil {
		return sdk.Result{}, sdk.ErrNotConfigured
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return sdk.Result{}, ctx.Err()
	}

	runCtx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	args := append(append([]string(nil), cfg.argv[1:]...), req.Ref)
	cmd := exec.CommandContext(runCtx, cfg.argv[0], args...)
	cmd.Env = []string{
		"PATH=" + cfg.path,
		"AGENTHOST_SESSION_ID=" + req.SessionID,
		"AGENTHOST_SUBJECT=" + req.Subject,
		"AGENTHOST_SERVER=" + req.Server,
		"AGENTHOST_TOOL=" + req.Tool,
		"AGENTHOST_PARAM=" + req.Param,
	}
	cmd.Stdin = nil
	stdout := &cappedBuffer{max: maxStdout}
	stderr := &countingWriter{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = commandProcAttr()
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	err := cmd.Run()
	if cmd.Process != nil {
		// Whatever the command left running in its group goes with it.
		_ = killGroup(cmd.Process.Pid)
	}
	switch {
	case ctx.Err() != nil:
		return sdk.Result{}, ctx.Err()
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		return sdk.Result{}, fmt.Errorf("command timed out after %s and was killed: %w", cfg.timeout, context.DeadlineExceeded)
	case err != nil:
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return sdk.Result{}, fmt.Errorf("command failed (%s); stderr withheld (%d bytes)", exitErr.ProcessState, stderr.n)
		}
		return sdk.Result{}, fmt.Errorf("command could not run: %w", err)
	case stdout.overflow:
		return sdk.Result{}, fmt.Errorf("command printed more than %d bytes", maxStdout)
	}
	return parseOutput(stdout.Bytes())
}

// credentialOutput is the credential_process-style document a command
// prints.
type credentialOutput struct {
	Version    int     `json:"Version"`
	Value      *string `json:"Value"`
	Expiration string  `json:"Expiration"`
}

// parseOutput reads the command's JSON. Its errors never quote the output,
// which holds the secret.
func parseOutput(out []byte) (sdk.Result, error) {
	var doc credentialOutput
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&doc); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return sdk.Result{}, fmt.Errorf("command output: %s has the wrong type", te.Field)
		case len(bytes.TrimSpace(out)) == 0:
			return sdk.Result{}, errors.New("command printed nothing; want {\"Version\": 1, \"Value\": \"...\"}")
		default:
			return sdk.Result{}, errors.New("command output is not a JSON object; want {\"Version\": 1, \"Value\": \"...\"}")
		}
	}
	if dec.More() {
		return sdk.Result{}, errors.New("command output has data after the JSON object")
	}
	if doc.Version != 1 {
		return sdk.Result{}, fmt.Errorf("command output has Version %d; want 1", doc.Version)
	}
	if doc.Value == nil || *doc.Value == "" {
		return sdk.Result{}, errors.New("command output has no Value")
	}
	res := sdk.Result{Value: *doc.Value, Sensitivity: sdk.Secret}
	if doc.Expiration != "" {
		t, err := time.Parse(time.RFC3339, doc.Expiration)
		if err != nil {
			return sdk.Result{}, errors.New("command output Expiration is not an RFC 3339 time")
		}
		res.Expiry = t
	}
	return res, nil
}

func killGroup(pid int) error {
	if pid <= 0 {
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// cappedBuffer keeps at most max bytes and notes whether more came. It
// does not embed bytes.Buffer: io.Copy would use the promoted ReadFrom and
// bypass the cap.
type cappedBuffer struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); len(p) > room {
		b.overflow = true
		if room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) Bytes() []byte { return b.buf.Bytes() }

// countingWriter discards what it is given and counts it: a command's
// stderr may echo the secret, so none of it is kept.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
