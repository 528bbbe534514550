package childproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Bubblewrap (sandbox.mechanism bubblewrap, or auto without Landlock): the
// supervisor runs the child inside bwrap, which gives it a root of its own
// holding only the sandbox's paths (read-only binds of Read, binds of
// Write), a fresh /proc of its own PID namespace and a minimal /dev, no
// network namespace of the host's under network none, a session of its
// own, and its death with the supervisor. The supervisor still sets the
// limits and loads the seccomp filter, which bwrap and the child inherit.
// bwrap is found by LookPath (the host's PATH), once per process, with its
// links resolved, and that one file is what every supervisor runs; it is
// tried once (a sandbox it cannot make, as where user namespaces are
// disabled, refuses every sandboxed child with what bwrap said).

// bubblewrapProbeTimeout bounds the trial run of bwrap.
const bubblewrapProbeTimeout = 5 * time.Second

// bubblewrapFound is the one remembered answer of bubblewrapPath: the bwrap
// found on the PATH and whether it runs (one entry: a new PATH's bwrap
// replaces it).
var bubblewrapFound struct {
	mu   sync.Mutex
	path string
	err  error
}

// bubblewrapPath is the bwrap to run, or an error wrapping
// ErrSandboxUnavailable saying why there is none.
func bubblewrapPath() (string, error) {
	p, err := LookPath("bwrap", "")
	if err != nil {
		return "", fmt.Errorf("%w: sandbox.mechanism bubblewrap: bwrap is not installed (not on the PATH; Debian's package is bubblewrap); sandbox.mechanism: landlock does without it", ErrSandboxUnavailable)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	bubblewrapFound.mu.Lock()
	defer bubblewrapFound.mu.Unlock()
	if bubblewrapFound.path == p {
		return p, bubblewrapFound.err
	}
	err = probeBubblewrap(p)
	bubblewrapFound.path, bubblewrapFound.err = p, err
	return p, err
}

// probeBubblewrap runs bwrap once with the namespaces a sandbox uses.
func probeBubblewrap(bwrap string) error {
	ok, err := LookPath("true", "")
	if err != nil {
		return fmt.Errorf("%w: sandbox.mechanism bubblewrap: no true(1) to try bwrap with: %v", ErrSandboxUnavailable, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bubblewrapProbeTimeout)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-net",
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", ok)
	cmd.Stderr = &stderr
	cmd.Env = []string{}
	if err := cmd.Run(); err != nil {
		said, _, _ := strings.Cut(strings.TrimSpace(stderr.String()), "\n")
		if said == "" {
			said = err.Error()
		}
		if len(said) > 200 {
			said = said[:200] + "..."
		}
		return fmt.Errorf("%w: sandbox.mechanism bubblewrap: %s cannot make a sandbox here (%s): it needs user namespaces (or to run as root); sandbox.mechanism: landlock does without them",
			ErrSandboxUnavailable, bwrap, said)
	}
	return nil
}

// checkBubblewrap is check under the bubblewrap mechanism.
func (sb *Sandbox) checkBubblewrap() (Enforcement, error) {
	e := Enforcement{Mode: ModeEnforce, Network: sb.network()}
	if sb.network() == NetworkLoopback || len(sb.Ports) > 0 {
		return e, fmt.Errorf("%w: sandbox.mechanism bubblewrap gives a child the whole network or none of it: network %s with ports needs sandbox.mechanism landlock", ErrSandboxUnavailable, sb.network())
	}
	if err := sb.checkProcesses(); err != nil {
		return e, err
	}
	p, err := bubblewrapPath()
	if err != nil {
		return e, err
	}
	e.Bubblewrap = p
	e.Mechanism = sb.mechanisms(MechanismBubblewrap)
	return e, nil
}

// errNoBubblewrap: a supervisor told to use bubblewrap without its path.
var errNoBubblewrap = errors.New("sandbox.mechanism bubblewrap without an absolute bwrap path")

// bubblewrapArgs is the bwrap command line that runs path (argv) confined
// by sb, in dir (the supervisor's working directory: the child's, when the
// sandbox grants it, else /). root drops every capability inside (bwrap
// keeps them for a privileged caller otherwise).
func bubblewrapArgs(sb *Sandbox, path string, argv []string, dir string, root bool) []string {
	args := []string{sb.Bubblewrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc"}
	if sb.network() == NetworkNone {
		args = append(args, "--unshare-net")
	}
	if root {
		args = append(args, "--cap-drop", "ALL")
	}
	// /proc and /dev are bwrap's own (the sandbox's PID namespace, the
	// harmless devices), whatever the read list says of the host's.
	args = append(args, "--proc", "/proc", "--dev", "/dev")
	own := func(p string) bool {
		return p == "/proc" || strings.HasPrefix(p, "/proc/") || p == "/dev" || strings.HasPrefix(p, "/dev/")
	}
	// Reads first: a write bind of a folder then covers the read binds
	// beneath it, so a path is writable when either list says so.
	for _, p := range sb.Read {
		if !own(p) {
			args = append(args, "--ro-bind-try", p, p)
		}
	}
	for _, p := range sb.Write {
		if !own(p) {
			args = append(args, "--bind-try", p, p)
		}
	}
	if dir == "" || !underAny(dir, append(append([]string(nil), sb.Read...), sb.Write...)) {
		dir = "/"
	}
	args = append(args, "--chdir", dir, "--", path)
	if len(argv) > 1 {
		args = append(args, argv[1:]...)
	}
	return args
}
