package compose

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/internal/childproc"
)

// The workload assertion of the jwt-bearer grant (workload identity
// federation) comes from a file the platform keeps current (a projected
// service account token, say), read each time a token is needed, or from
// the standard output of a command run at that moment. The command is an
// executable run directly, never through a shell: it is found by
// childproc.LookPath's rule (a bare name in PATH, a relative path from the
// current directory), and with assertionSha256 it runs from the verified
// copy of its bytes (childproc.OpenPinned), like a pinned hook. Under a
// managed allowlist it is admitted as a stdio server's command is
// (config.Config.AdmitAssertionCommand) and the file the allowlist
// matched is the one run (and pinned). The
// assertion is a credential: errors name the file or the command and how
// it failed, never what it printed (stdout or stderr).

// Bounds of an assertion command.
const (
	assertionTimeout   = 30 * time.Second
	maxAssertionOutput = 64 << 10
)

// assertionSource returns the assertion source an oauth block configures.
// admit, when set, checks the file the command names against the managed
// allowlist and returns the file to run.
func assertionSource(o *config.OAuth, admit func(path string) (string, error)) (func(context.Context) (string, error), error) {
	if o.AssertionCommand == "" {
		return credentialSource("oauth.assertionFile", "", o.AssertionFile), nil
	}
	var sum []byte
	if o.AssertionSHA256 != "" {
		b, err := hex.DecodeString(o.AssertionSHA256)
		if err != nil || len(b) != 32 {
			return nil, errors.New("oauth.assertionSha256: must be 64 hex digits")
		}
		sum = b
	}
	command, args := o.AssertionCommand, append([]string(nil), o.AssertionArgs...)
	return func(ctx context.Context) (string, error) {
		return runAssertionCommand(ctx, command, args, sum, admit)
	}, nil
}

// runAssertionCommand runs the command and returns its standard output,
// trimmed. It is killed (with what it started) after assertionTimeout or
// when ctx ends.
func runAssertionCommand(ctx context.Context, command string, args []string, sum []byte, admit func(string) (string, error)) (string, error) {
	path, err := childproc.LookPath(command, "")
	if err != nil {
		return "", fmt.Errorf("oauth.assertionCommand: %w", err)
	}
	if admit != nil {
		if path, err = admit(path); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, assertionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	if !strings.ContainsRune(command, filepath.Separator) {
		cmd.Args[0] = command
	}
	if sum != nil {
		pinned, err := childproc.OpenPinned(path, sum, childproc.PinOptions{})
		var mismatch *childproc.PinMismatchError
		switch {
		case errors.As(err, &mismatch):
			return "", fmt.Errorf("oauth.assertionCommand: %s has sha256 %x, not the assertionSha256 configured", path, mismatch.Got)
		case err != nil:
			return "", fmt.Errorf("oauth.assertionCommand: %w", err)
		}
		defer pinned.Close()
		if err := pinned.Apply(cmd); err != nil {
			return "", fmt.Errorf("oauth.assertionCommand: %w", err)
		}
	}
	cmd.Env = childproc.Env(os.Getenv, nil)
	cmd.SysProcAttr = childproc.Attr(syscall.SIGKILL)
	cmd.Cancel = func() error {
		childproc.KillTree(cmd.Process.Pid)
		return nil
	}
	cmd.WaitDelay = time.Second
	out := &childproc.CappedBuffer{Max: maxAssertionOutput}
	cmd.Stdout = out // stderr is dropped: it may quote the credential
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("oauth.assertionCommand %s: no answer within %s: %w", command, assertionTimeout, ctx.Err())
		}
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			return "", fmt.Errorf("oauth.assertionCommand %s: %s", command, exitErr.ProcessState)
		}
		return "", fmt.Errorf("oauth.assertionCommand %s: %w", command, err)
	}
	if out.Over() {
		return "", fmt.Errorf("oauth.assertionCommand %s: printed more than %d bytes", command, maxAssertionOutput)
	}
	return strings.TrimSpace(string(out.Bytes())), nil
}
