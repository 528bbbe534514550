package childproc

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/childproc/proctree"
)

// Network is what a sandboxed child may do on the network.
type Network string

// The network settings of a Sandbox (docs/config.md, "sandbox").
const (
	// NetworkNone refuses every socket but AF_UNIX and AF_NETLINK
	// (seccomp), and every TCP bind and connect (Landlock, ABI 4+).
	NetworkNone Network = "none"
	// NetworkLoopback allows TCP only, and TCP connect only to Ports
	// (Landlock, ABI 4+). Landlock restricts ports, not addresses: the
	// loopback address is what the configuration promises, the port is
	// what the kernel enforces.
	NetworkLoopback Network = "loopback"
	// NetworkAllow leaves the network open, or, with Ports, restricts TCP
	// connect to those ports (Landlock, ABI 4+).
	NetworkAllow Network = "allow"
)

// Sandbox is what a sandboxed child (and everything it starts) may touch:
// the kernel enforces it from the moment the child's program starts. The
// supervisor applies it to itself just before it starts the child, so the
// child inherits it across exec (see Supervisor.WrapSandboxed).
type Sandbox struct {
	// Read and Write are absolute paths (files or directories, the whole
	// tree beneath a directory). Write implies read. Execute goes with
	// read. A path that does not exist is skipped.
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
	// Network is none, loopback or allow ("" is allow).
	Network Network `json:"network,omitempty"`
	// Ports are the TCP ports a child may connect to under loopback, or
	// under allow when the list is not empty.
	Ports []uint16 `json:"ports,omitempty"`
	// Limits are resource limits (zero: not limited).
	Limits Limits `json:"limits"`
	// Mechanism is how files and the network are confined: landlock (""
	// too: Landlock and seccomp applied by the supervisor to itself),
	// bubblewrap (the child runs inside bwrap's namespaces: read-only binds
	// of Read, binds of Write, --unshare-net under network none; seccomp
	// and the limits as for landlock), or auto (landlock where this kernel
	// can apply the sandbox as configured, else bubblewrap where it runs).
	// Check resolves auto; the supervisor gets landlock or bubblewrap.
	Mechanism string `json:"mechanism,omitempty"`
	// Bubblewrap is the bwrap executable the supervisor runs (absolute,
	// links resolved), set by WrapSandboxed under bubblewrap.
	Bubblewrap string `json:"bubblewrap,omitempty"`
}

// Sandbox mechanisms (Sandbox.Mechanism).
const (
	MechanismLandlock   = "landlock"
	MechanismBubblewrap = "bubblewrap"
	MechanismAuto       = "auto"
)

// Limits are per-process resource limits (setrlimit), inherited by every
// process the child starts.
type Limits struct {
	// AddressSpace bounds each process's virtual memory (RLIMIT_AS), in
	// bytes.
	AddressSpace uint64 `json:"addressSpace,omitempty"`
	// OpenFiles bounds each process's open descriptors (RLIMIT_NOFILE).
	OpenFiles uint64 `json:"openFiles,omitempty"`
	// Processes bounds the processes of the child's tree: RLIMIT_NPROC
	// (which Linux counts per user, over all the user's processes), and,
	// where agenthost runs as root (whom Linux exempts from RLIMIT_NPROC),
	// a pids cgroup of the tree's own.
	Processes uint64 `json:"processes,omitempty"`
	// CPUSeconds bounds each process's CPU time (RLIMIT_CPU): SIGXCPU,
	// then SIGKILL.
	CPUSeconds uint64 `json:"cpuSeconds,omitempty"`
}

// Enforcement is what the kernel enforces for a sandboxed child, as
// reported by `servers --json` and `tools --json` (docs/cli.md).
type Enforcement struct {
	// Mode is enforce or off.
	Mode string `json:"mode"`
	// Mechanism names the kernel mechanisms applied, joined by "+":
	// landlock or bubblewrap, seccomp, rlimit, pids-cgroup; "none" when
	// off.
	Mechanism string `json:"mechanism"`
	// Bubblewrap is the bwrap executable that confines the child (empty
	// unless the mechanism is bubblewrap).
	Bubblewrap string `json:"bubblewrap,omitempty"`
	// LandlockABI is the Landlock ABI version the rules were built for (0
	// when off).
	LandlockABI int `json:"landlockABI"`
	// Network is the network setting enforced ("" when off).
	Network Network `json:"network,omitempty"`
}

// Sandbox modes.
const (
	ModeEnforce = "enforce"
	ModeOff     = "off"
)

// ErrSandboxUnavailable is wrapped by the error of a child whose sandbox
// this system cannot apply as configured: the child is not started.
var ErrSandboxUnavailable = errors.New("sandbox unavailable")

// ErrNoSupervisor is wrapped by the error of a sandboxed child that has no
// supervisor to apply its sandbox: the child is not started.
var ErrNoSupervisor = errors.New("a sandbox needs the supervisor process (childproc.MaybeSupervise in main, and a Supervisor)")

// landlockABIOverride, when set in the host's environment, makes Probe
// report that Landlock ABI instead of the kernel's: 0 simulates a kernel
// without Landlock. It exists for tests of the refusal, which cannot
// change the kernel.
const landlockABIOverride = "AGENTHOST_TEST_LANDLOCK_ABI"

// Minimum Landlock ABI versions of the rules a Sandbox asks for.
const (
	abiFilesystem = 1 // path rules
	abiNetwork    = 4 // TCP port rules
	abiScoped     = 6 // abstract UNIX sockets and signals
)

// Check reports what this system enforces for sb, or an error wrapping
// ErrSandboxUnavailable that names what is missing and the setting that
// relaxes it. It does not change this process.
func (sb *Sandbox) Check() (Enforcement, error) {
	return sb.check(Probe())
}

// Probe returns the Landlock ABI version of this kernel: 0 where there is
// no Landlock (or it is disabled at boot), and outside Linux.
func Probe() int {
	if v := os.Getenv(landlockABIOverride); v != "" {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return kernelLandlockABI()
}

// check reports what sb gets with mechanism resolved: under auto,
// landlock when it can be applied, else bubblewrap when it runs here, else
// the refusal of both.
func (sb *Sandbox) check(abi int) (Enforcement, error) {
	switch sb.Mechanism {
	case MechanismBubblewrap:
		return sb.checkBubblewrap()
	case MechanismAuto:
		e, err := sb.checkLandlock(abi)
		if err == nil {
			return e, nil
		}
		eb, errb := sb.checkBubblewrap()
		if errb == nil {
			return eb, nil
		}
		return e, fmt.Errorf("%w; and sandbox.mechanism auto found no bubblewrap to use instead: %s", err,
			strings.TrimPrefix(errb.Error(), ErrSandboxUnavailable.Error()+": "))
	}
	return sb.checkLandlock(abi)
}

// checkLandlock is check under the landlock mechanism.
func (sb *Sandbox) checkLandlock(abi int) (Enforcement, error) {
	e := Enforcement{Mode: ModeEnforce, LandlockABI: abi, Network: sb.network()}
	if abi < abiFilesystem {
		return e, fmt.Errorf("%w: this kernel has no Landlock (Linux 5.13+ with landlock in the lsm= boot list); sandbox.mode: off runs the server unsandboxed", ErrSandboxUnavailable)
	}
	if sb.needsLandlockNet() && abi < abiNetwork {
		return e, fmt.Errorf("%w: sandbox.network %s with ports needs Landlock ABI %d (Linux 6.7+), this kernel has ABI %d; sandbox.network: allow without ports (or none) relaxes it", ErrSandboxUnavailable, sb.network(), abiNetwork, abi)
	}
	if err := sb.checkProcesses(); err != nil {
		return e, err
	}
	e.Mechanism = sb.mechanisms(MechanismLandlock)
	return e, nil
}

// checkProcesses: a process limit for root needs a pids cgroup.
func (sb *Sandbox) checkProcesses() error {
	if sb.Limits.Processes > 0 && isRoot() && !pidsCgroupAvailable() {
		return fmt.Errorf("%w: sandbox.limits.processes: Linux exempts root from RLIMIT_NPROC and no pids cgroup can be made here; remove sandbox.limits.processes, or run agenthost as another user", ErrSandboxUnavailable)
	}
	return nil
}

// mechanisms names what is applied besides first (landlock or
// bubblewrap). Every enforced sandbox loads a seccomp filter (io_uring,
// which would bypass the socket checks, is refused in all of them).
func (sb *Sandbox) mechanisms(first string) string {
	mech := []string{first, "seccomp"}
	if sb.Limits != (Limits{}) {
		mech = append(mech, "rlimit")
	}
	if sb.Limits.Processes > 0 && isRoot() {
		mech = append(mech, "pids-cgroup")
	}
	return strings.Join(mech, "+")
}

func (sb *Sandbox) network() Network {
	if sb.Network == "" {
		return NetworkAllow
	}
	return sb.Network
}

// needsLandlockNet: the setting restricts TCP by port, which only Landlock
// ABI 4+ can do. none does not need it: seccomp refuses the sockets.
func (sb *Sandbox) needsLandlockNet() bool {
	n := sb.network()
	return n == NetworkLoopback || (n == NetworkAllow && len(sb.Ports) > 0)
}

// WrapSandboxed is Wrap with a sandbox: the supervisor applies sb to
// itself (Landlock, seccomp, rlimits) and then starts the command, which
// inherits it. sb's Read gains what the command needs to run at all: the
// system's libraries and configuration, the command's own executable and
// its installation (the folder above a bin folder), and each argument that
// names an existing file together with its package (the outermost
// node_modules above it). It returns what is enforced, or an error
// (ErrSandboxUnavailable, ErrNoSupervisor) when the command must not
// start. A nil sb is Wrap.
func (s *Supervisor) WrapSandboxed(cmd *exec.Cmd, sb *Sandbox) (Enforcement, error) {
	if sb == nil {
		s.Wrap(cmd)
		return Enforcement{Mode: ModeOff, Mechanism: "none"}, nil
	}
	if s == nil {
		return Enforcement{}, ErrNoSupervisor
	}
	if cmd.Err != nil {
		return Enforcement{}, cmd.Err
	}
	e, err := sb.Check()
	if err != nil {
		return e, err
	}
	full := *sb
	full.Read = slices.Concat(systemReadPaths(), commandPaths(cmd, sb.Write), sb.Read)
	full.Mechanism, full.Bubblewrap = MechanismLandlock, ""
	if e.Bubblewrap != "" {
		full.Mechanism, full.Bubblewrap = MechanismBubblewrap, e.Bubblewrap
	}
	b, err := json.Marshal(&full)
	if err != nil {
		return e, fmt.Errorf("encoding the sandbox: %w", err)
	}
	// Path, never Small: the sandbox is applied by the program that holds
	// it (Small refuses one).
	s.wrapWith(cmd, s.Path)
	// SuperviseArg, then the sandbox, then Wrap's "N PATH ARGV0 ...".
	cmd.Args = slices.Insert(cmd.Args, 2, sandboxArg, string(b))
	return e, nil
}

// sandboxArg introduces the sandbox in a supervisor's arguments.
const sandboxArg = proctree.SandboxArg

// measureArg, in place of the command after the sandbox, makes the
// supervisor apply the sandbox, print how long that took (nanoseconds) and
// exit without starting anything: the benchmark of the setup cost
// (docs/PERFORMANCE.md) measures the real supervisor this way.
const measureArg = "-measure"

// MeasureSandbox runs the supervisor s once to apply sb and returns how
// long applying it took inside the supervisor (rlimits, Landlock, seccomp;
// not the process start). For benchmarks.
func (s *Supervisor) MeasureSandbox(sb *Sandbox) (time.Duration, error) {
	full := *sb
	full.Read = slices.Concat(systemReadPaths(), sb.Read)
	b, err := json.Marshal(&full)
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(s.Path, SuperviseArg, sandboxArg, string(b), measureArg).Output()
	if err != nil {
		return 0, fmt.Errorf("supervisor: %w", err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("supervisor printed %q: %w", out, err)
	}
	return time.Duration(ns), nil
}

// measureSandbox is the supervisor's side of MeasureSandbox.
func measureSandbox(sb *Sandbox) int {
	runtime.LockOSThread()
	start := time.Now()
	if _, err := applySandbox(sb); err != nil {
		fmt.Fprintf(os.Stderr, "agenthost supervisor: %v\n", err)
		return exitCannotRun
	}
	fmt.Println(time.Since(start).Nanoseconds())
	return 0
}

// commandPaths are the paths a command needs to read to run: its
// executable (as found and with links resolved) with its installation, and
// each argument that names an existing file (a script) with its package.
// A pinned copy passed as a descriptor (/proc/self/fd/N, OpenPinned's
// memfd) gets nothing: the name means the child's descriptor, not what
// this process's descriptor N resolves to, and the kernel does not check
// a memfd against path rules. Nor does a path under writable (the
// sandbox's Write, readable already): the child could have made it a link
// to anything, and its next start would grant the link's target (and that
// target's package) for reading.
func commandPaths(cmd *exec.Cmd, writable []string) []string {
	var out []string
	add := func(p string, installed func(string) []string) {
		p = absUnder(cmd.Dir, p)
		if !filepath.IsAbs(p) || strings.HasPrefix(p, "/proc/self/fd/") || underAny(p, writable) {
			return
		}
		for _, q := range []string{p, resolved(p)} {
			if q != "" {
				out = append(out, installed(q)...)
			}
		}
	}
	add(cmd.Path, installation)
	for _, a := range cmd.Args[1:] {
		if a == "" || strings.HasPrefix(a, "-") {
			continue
		}
		if fi, err := os.Stat(absUnder(cmd.Dir, a)); err == nil && fi.Mode().IsRegular() {
			add(a, scriptPackage)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// underAny reports whether p is one of dirs or lies beneath one, as
// written or with the links of either resolved.
func underAny(p string, dirs []string) bool {
	cands := []string{filepath.Clean(p)}
	if r := resolved(p); r != "" {
		cands = append(cands, r)
	}
	if r := resolved(filepath.Dir(p)); r != "" {
		cands = append(cands, filepath.Join(r, filepath.Base(p)))
	}
	for _, d := range dirs {
		ds := []string{filepath.Clean(d)}
		if r := resolved(d); r != "" {
			ds = append(ds, r)
		}
		for _, c := range cands {
			for _, d := range ds {
				if c == d || strings.HasPrefix(c, strings.TrimSuffix(d, "/")+"/") {
					return true
				}
			}
		}
	}
	return false
}

func absUnder(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return p
	}
	return filepath.Join(dir, p)
}

func resolved(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil || r == p {
		return ""
	}
	return r
}

// installation is what an executable needs: itself, the outermost
// node_modules above it, and for one in a bin folder that folder and the
// lib, lib64 and libexec folders beside it (a runtime's libraries: a Node.js
// or Python installed under the home folder). Never the folder above bin
// itself: that may be the home folder.
func installation(file string) []string {
	if pkg := nodeModules(file); pkg != "" {
		return []string{file, pkg}
	}
	dir := filepath.Dir(file)
	if filepath.Base(dir) != "bin" {
		return []string{file}
	}
	top := filepath.Dir(dir)
	return []string{dir, filepath.Join(top, "lib"), filepath.Join(top, "lib64"), filepath.Join(top, "libexec")}
}

// scriptPackage is what a script argument needs: itself, or, inside a
// node_modules folder, the outermost one (its package and dependencies).
func scriptPackage(file string) []string {
	if pkg := nodeModules(file); pkg != "" {
		return []string{pkg}
	}
	return []string{file}
}

// nodeModules is the outermost node_modules folder above file, or "".
func nodeModules(file string) string {
	parts := strings.Split(filepath.Dir(file), string(filepath.Separator))
	if i := slices.Index(parts, "node_modules"); i > 0 {
		return strings.Join(parts[:i+1], string(filepath.Separator))
	}
	return ""
}
