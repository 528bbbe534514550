//go:build linux

package childproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

func kernelLandlockABI() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func isRoot() bool { return os.Geteuid() == 0 }

// systemReadPaths is what every sandboxed program may read (and execute):
// the system's programs, libraries and configuration, /proc (Landlock keeps
// another domain's /proc/PID files that need ptrace access, such as
// environ and mem, closed) and /sys, and the harmless devices. The home
// folders, /tmp, /var and /run (but its resolver configuration) are not in
// it.
func systemReadPaths() []string {
	return []string{
		"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/etc",
		"/proc", "/sys", "/run/systemd/resolve",
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	}
}

// systemWritePaths are the devices every program may write to.
var systemWritePaths = []string{"/dev/null", "/dev/zero", "/dev/full"}

// applied is what applySandbox leaves for the supervisor to finish once
// the child has started.
type applied struct {
	// leaveCgroup, when set, moves the supervisor back out of the child's
	// pids cgroup: the child and its tree stay in it.
	leaveCgroup *os.File
}

// applySandbox restricts this process (the supervisor, whose thread that
// will start the child is locked) so that the child it starts next
// inherits sb: rlimits, a pids cgroup (root with a process limit), the
// capability to raise limits dropped, then Landlock, then seccomp. Any
// failure is returned and the child must not start.
//
// Under bubblewrap (the child is then bwrap, see bubblewrapArgs) there is
// no Landlock: bwrap makes its mounts, which a Landlock domain forbids.
func applySandbox(sb *Sandbox) (*applied, error) {
	abi := kernelLandlockABI()
	bubblewrap := sb.Mechanism == MechanismBubblewrap
	switch {
	case bubblewrap && !filepath.IsAbs(sb.Bubblewrap):
		return nil, fmt.Errorf("%w: %v", ErrSandboxUnavailable, errNoBubblewrap)
	case bubblewrap:
		if err := sb.checkProcesses(); err != nil {
			return nil, err
		}
	default:
		if _, err := sb.checkLandlock(abi); err != nil {
			return nil, err
		}
	}
	a := &applied{}
	if sb.Limits.Processes > 0 && isRoot() {
		f, err := joinPidsCgroup(sb.Limits.Processes)
		if err != nil {
			return nil, fmt.Errorf("%w: sandbox.limits.processes: %v", ErrSandboxUnavailable, err)
		}
		a.leaveCgroup = f
	}
	if err := setLimits(sb.Limits); err != nil {
		return nil, err
	}
	if !bubblewrap {
		if err := restrictLandlock(sb, abi); err != nil {
			return nil, fmt.Errorf("%w: landlock: %v", ErrSandboxUnavailable, err)
		}
	}
	if err := loadSeccomp(sb); err != nil {
		return nil, fmt.Errorf("%w: seccomp: %v", ErrSandboxUnavailable, err)
	}
	return a, nil
}

// started finishes the sandbox once the child runs: the supervisor leaves
// the child's pids cgroup, so it does not count against the child's limit.
func (a *applied) started() {
	if a == nil || a.leaveCgroup == nil {
		return
	}
	_, _ = a.leaveCgroup.WriteString(strconv.Itoa(os.Getpid()))
	_ = a.leaveCgroup.Close()
}

// supervisorHeadroom is the address space the supervisor may still need
// once it shares the child's RLIMIT_AS (it sets the limit on itself).
const supervisorHeadroom = 256 << 20

// ownAddressSpace is this process's virtual memory size (VmSize).
func ownAddressSpace() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func setLimits(l Limits) error {
	if l.AddressSpace > 0 {
		if need := ownAddressSpace() + supervisorHeadroom; l.AddressSpace < need {
			return fmt.Errorf("%w: sandbox.limits.addressSpace %dMiB is below what the sandboxing supervisor itself reserves (%dMiB with headroom; a Go or Node.js server reserves as much): raise it", ErrSandboxUnavailable, l.AddressSpace>>20, need>>20)
		}
	}
	set := func(name string, res int, v uint64) error {
		if v == 0 {
			return nil
		}
		// syscall.Setrlimit, not unix's: for RLIMIT_NOFILE it also stops
		// os/exec from restoring the original limit in the child.
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: v, Max: v}); err != nil {
			return fmt.Errorf("%w: sandbox.limits.%s: setrlimit: %v", ErrSandboxUnavailable, name, err)
		}
		return nil
	}
	for _, r := range []struct {
		name string
		res  int
		v    uint64
	}{
		{"addressSpace", unix.RLIMIT_AS, l.AddressSpace},
		{"openFiles", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"processes", unix.RLIMIT_NPROC, l.Processes},
		{"cpuSeconds", unix.RLIMIT_CPU, l.CPUSeconds},
	} {
		if err := set(r.name, r.res, r.v); err != nil {
			return err
		}
	}
	if l == (Limits{}) {
		return nil
	}
	// A process with CAP_SYS_RESOURCE (root) may raise a hard limit
	// again: the child must not have it. The bounding set is per thread;
	// the supervisor starts the child from this (locked) thread.
	if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_RESOURCE, 0, 0, 0); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("%w: sandbox.limits: dropping CAP_SYS_RESOURCE: %v", ErrSandboxUnavailable, err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("%w: sandbox.limits: clearing ambient capabilities: %v", ErrSandboxUnavailable, err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: sandbox.limits: capget: %v", ErrSandboxUnavailable, err)
	}
	if data[0].Inheritable&(1<<unix.CAP_SYS_RESOURCE) != 0 {
		data[0].Inheritable &^= 1 << unix.CAP_SYS_RESOURCE
		if err := unix.Capset(&hdr, &data[0]); err != nil {
			return fmt.Errorf("%w: sandbox.limits: capset: %v", ErrSandboxUnavailable, err)
		}
	}
	if isRoot() && capInBounding(unix.CAP_SYS_RESOURCE) {
		return fmt.Errorf("%w: sandbox.limits: CAP_SYS_RESOURCE could not be dropped (a root child could raise its limits)", ErrSandboxUnavailable)
	}
	return nil
}

func capInBounding(c int) bool {
	r, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0)
	return err == nil && r == 1
}

// restrictLandlock builds the ruleset for exactly this kernel's ABI (no
// best effort: check has refused what it cannot express) and restricts
// the calling thread, which must be locked and must be the one that starts
// the child.
func restrictLandlock(sb *Sandbox, abi int) error {
	cfg := landlockConfig(abi)
	var rules []landlock.Rule
	for _, p := range sb.Read {
		rules = append(rules, pathRule(p, false))
	}
	for _, p := range append(sb.Write, systemWritePaths...) {
		rules = append(rules, pathRule(p, true))
	}
	switch sb.network() {
	case NetworkNone:
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	case NetworkLoopback:
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
		for _, port := range sb.Ports {
			rules = append(rules, landlock.ConnectTCP(port))
		}
	case NetworkAllow:
		cfg.HandledAccessNet = 0
		if len(sb.Ports) > 0 {
			cfg.HandledAccessNet = ll.AccessNetConnectTCP
			for _, port := range sb.Ports {
				rules = append(rules, landlock.ConnectTCP(port))
			}
		}
	}
	if abi < abiNetwork {
		cfg.HandledAccessNet = 0 // check refused the settings that need it
	}
	// Abstract UNIX sockets and signals stay inside the domain where the
	// kernel can say so (ABI 6+); under allow they stay open.
	cfg.Scoped = 0
	if abi >= abiScoped && sb.network() != NetworkAllow {
		cfg.Scoped = ll.ScopeAbstractUnixSocket | ll.ScopeSignal
	} else if abi >= abiScoped {
		cfg.Scoped = ll.ScopeSignal
	}
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	// This thread only: it is the one that forks the child (the
	// supervisor's goroutine is locked to it), and a child inherits the
	// domain of the thread that forked it. Restricting every thread of
	// the process (go-landlock's Restrict below ABI 8) signals each
	// runtime thread and waits for it: milliseconds on a busy machine.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// landlockConfig restricts every filesystem right of the given ABI (the
// newest go-landlock knows, for a newer kernel).
func landlockConfig(abi int) landlock.Config {
	versions := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	abi = max(1, min(abi, len(versions)))
	return versions[abi-1]
}

// pathRule grants read (and execute), or read and write, beneath p; a
// file gets the file rights only, and a path that does not exist is
// skipped.
func pathRule(p string, write bool) landlock.FSRule {
	dir := true
	if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
		dir = false
	}
	switch {
	case write && dir:
		return landlock.RWDirs(p).IgnoreIfMissing()
	case write:
		return landlock.RWFiles(p).IgnoreIfMissing()
	case dir:
		return landlock.RODirs(p).IgnoreIfMissing()
	default:
		return landlock.ROFiles(p).IgnoreIfMissing()
	}
}

// Socket arguments the seccomp filter looks at.
const (
	sockTypeMask   = 0xf // the type without SOCK_NONBLOCK and SOCK_CLOEXEC
	ipprotoTCP     = 6
	ipprotoUDP     = 17
	errnoRefused   = uint32(unix.EACCES)
	errnoNoSyscall = uint32(unix.ENOSYS)
)

// loadSeccomp loads the filter of the calling thread (and of every child
// it starts): io_uring refused in every enforced sandbox (its socket and
// connect operations would bypass the checks below; runtimes fall back to
// plain syscalls on ENOSYS); under none every socket but AF_UNIX and
// AF_NETLINK refused; under loopback only TCP sockets of AF_INET and
// AF_INET6 besides those; under allow with ports TCP and UDP (DNS) only.
// Raw, packet and multipath-TCP sockets, which Landlock's port rules do
// not see, are refused wherever the network is restricted.
func loadSeccomp(sb *Sandbox) error {
	groups := []seccomp.SyscallGroup{{
		Names:  []string{"io_uring_setup", "io_uring_enter", "io_uring_register"},
		Action: seccomp.ActionErrno | seccomp.Action(errnoNoSyscall),
	}}
	if sets := socketDenials(sb); len(sets) > 0 {
		var named []seccomp.NameWithConditions
		for _, c := range sets {
			named = append(named, seccomp.NameWithConditions{Name: "socket", Conditions: c})
		}
		groups = append(groups, seccomp.SyscallGroup{NamesWithCondtions: named, Action: seccomp.ActionErrno | seccomp.Action(errnoRefused)})
	}
	// No TSYNC: like the Landlock domain, the filter is the forking
	// thread's, and the child inherits it.
	return seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Policy:     seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups},
	})
}

// socketDenials are the argument conditions under which socket(2) is
// refused (each set is ANDed; the sets are ORed).
func socketDenials(sb *Sandbox) []seccomp.ArgumentConditions {
	arg := func(i uint32, op seccomp.Operation, v uint64) seccomp.Condition {
		return seccomp.Condition{Argument: i, Operation: op, Value: v}
	}
	local := []seccomp.Condition{arg(0, seccomp.NotEqual, unix.AF_UNIX), arg(0, seccomp.NotEqual, unix.AF_NETLINK)}
	switch net := sb.network(); {
	case net == NetworkNone:
		return []seccomp.ArgumentConditions{local}
	case net == NetworkLoopback || len(sb.Ports) > 0:
		sets := []seccomp.ArgumentConditions{append(local, arg(0, seccomp.NotEqual, unix.AF_INET), arg(0, seccomp.NotEqual, unix.AF_INET6))}
		for _, fam := range []uint64{unix.AF_INET, unix.AF_INET6} {
			if net == NetworkLoopback {
				// The type's low bits must be SOCK_STREAM (1) exactly.
				sets = append(sets,
					seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsSet, sockTypeMask&^unix.SOCK_STREAM)},
					seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsNotSet, unix.SOCK_STREAM)},
					seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(2, seccomp.NotEqual, 0), arg(2, seccomp.NotEqual, ipprotoTCP)},
				)
				continue
			}
			// SOCK_STREAM (1) or SOCK_DGRAM (2) only: not 0, not 3
			// (SOCK_RAW), nothing with the 4 or 8 bit.
			sets = append(sets,
				seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsSet, 0xc)},
				seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsNotSet, 0x3)},
				seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(1, seccomp.BitsSet, 0x1), arg(1, seccomp.BitsSet, 0x2)},
				seccomp.ArgumentConditions{arg(0, seccomp.Equal, fam), arg(2, seccomp.NotEqual, 0), arg(2, seccomp.NotEqual, ipprotoTCP), arg(2, seccomp.NotEqual, ipprotoUDP)},
			)
		}
		return sets
	}
	return nil
}

// pidsCgroupPrefix names the pids cgroups of sandboxed trees, one per
// supervisor: agenthost-sandbox-PID.
const pidsCgroupPrefix = "agenthost-sandbox-"

// pidsCgroupDir is the cgroup v1 pids hierarchy folder this process is in.
func pidsCgroupDir() (string, bool) {
	mount := ""
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ... mountpoint ... - cgroup cgroup rw,pids
		fields := strings.Fields(sc.Text())
		i := slices.Index(fields, "-")
		if i < 0 || i+3 >= len(fields) || len(fields) < 5 || fields[i+1] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(fields[i+3], ",") {
			if o == "pids" {
				mount = fields[4]
			}
		}
	}
	if mount == "" {
		return "", false
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",pids,") {
			return filepath.Join(mount, parts[2]), true
		}
	}
	return "", false
}

func pidsCgroupAvailable() bool {
	dir, ok := pidsCgroupDir()
	if !ok {
		return false
	}
	return unix.Access(dir, unix.W_OK) == nil
}

// joinPidsCgroup makes this supervisor's pids cgroup with the limit and
// moves the supervisor into it (the child it starts is born there). It
// returns the parent's cgroup.procs, opened now (Landlock will not let the
// supervisor open it later), for leaving once the child runs. Empty
// cgroups of supervisors that are gone are removed first.
func joinPidsCgroup(limit uint64) (*os.File, error) {
	parent, ok := pidsCgroupDir()
	if !ok {
		return nil, errors.New("no cgroup v1 pids hierarchy is mounted")
	}
	removeStalePidsCgroups(parent)
	dir := filepath.Join(parent, pidsCgroupPrefix+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.FormatUint(limit, 10)), 0); err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	back, err := os.OpenFile(filepath.Join(parent, "cgroup.procs"), os.O_WRONLY, 0)
	if err != nil {
		_ = os.Remove(dir)
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
		_ = back.Close()
		_ = os.Remove(dir)
		return nil, err
	}
	return back, nil
}

// removeStalePidsCgroups removes the pids cgroups of sandboxed trees that
// have ended (rmdir refuses a cgroup that still has members).
func removeStalePidsCgroups(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), pidsCgroupPrefix) {
			_ = unix.Rmdir(filepath.Join(parent, e.Name()))
		}
	}
}

// ReleaseSandbox removes what the sandbox of the supervisor pid left once
// its tree has ended (the pids cgroup, which the sandboxed supervisor
// cannot remove itself). Call it after the tree is gone.
func ReleaseSandbox(pid int) {
	if parent, ok := pidsCgroupDir(); ok {
		_ = unix.Rmdir(filepath.Join(parent, pidsCgroupPrefix+strconv.Itoa(pid)))
	}
}
