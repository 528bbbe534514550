package childproc

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SandboxConfig is the configuration schema of a sandbox block (docs/config.md,
// "sandbox"): package config reads it for stdio servers and plugin sources,
// package hooks for each hook; Child makes the kernel Sandbox of it. Off
// unless Mode is enforce.
type SandboxConfig struct {
	// Mode is enforce or off (the default).
	Mode string `json:"mode" yaml:"mode"`
	// Mechanism is landlock (the default), bubblewrap or auto (see
	// Sandbox.Mechanism).
	Mechanism string `json:"mechanism" yaml:"mechanism"`
	// Filesystem grants paths beyond what every server gets (the
	// system's libraries and configuration, the server's own command and
	// its package, its cwd for writing).
	Filesystem SandboxFilesystem `json:"filesystem" yaml:"filesystem"`
	// Network is none (the default under enforce), loopback or allow.
	Network string `json:"network" yaml:"network"`
	// Connect lists host:port destinations: required under loopback
	// (loopback hosts only), optional under allow. The kernel enforces the
	// ports (Landlock), not the hosts.
	Connect []string `json:"connect" yaml:"connect"`
	// Limits are resource limits; zero means not limited.
	Limits SandboxLimits `json:"limits" yaml:"limits"`
}

// SandboxFilesystem lists paths (files or folders: a folder grants its
// whole tree), with ${VAR} expanded and relative paths taken from the
// configuration file's folder.
type SandboxFilesystem struct {
	Read  []string `json:"read" yaml:"read"`
	Write []string `json:"write" yaml:"write"`
}

// SandboxLimits are per-process resource limits.
type SandboxLimits struct {
	// AddressSpace is a size such as "4GiB" (RLIMIT_AS).
	AddressSpace string `json:"addressSpace" yaml:"addressSpace"`
	// OpenFiles bounds open descriptors per process (RLIMIT_NOFILE).
	OpenFiles int64 `json:"openFiles" yaml:"openFiles"`
	// Processes bounds processes and threads (RLIMIT_NPROC; as root a
	// pids cgroup of the server's tree).
	Processes int64 `json:"processes" yaml:"processes"`
	// CPUSeconds bounds each process's CPU time (RLIMIT_CPU).
	CPUSeconds int64 `json:"cpuSeconds" yaml:"cpuSeconds"`
}

// Enforced reports whether the sandbox is on.
func (s SandboxConfig) Enforced() bool { return s.Mode == ModeEnforce }

// Child is the kernel sandbox of a server whose working folder is cwd (""
// when it has none): nil when the mode is off. Write gains cwd. The
// sandbox must have been validated.
func (s SandboxConfig) Child(cwd string) (*Sandbox, error) {
	if !s.Enforced() {
		return nil, nil
	}
	out := &Sandbox{Network: Network(s.Network), Mechanism: s.Mechanism}
	if out.Network == "" {
		out.Network = NetworkNone
	}
	abs := func(list []string) ([]string, error) {
		res := make([]string, 0, len(list))
		for _, p := range list {
			a, err := filepath.Abs(p)
			if err != nil {
				return nil, fmt.Errorf("sandbox path %q: %w", p, err)
			}
			res = append(res, a)
		}
		return res, nil
	}
	var err error
	if out.Read, err = abs(s.Filesystem.Read); err != nil {
		return nil, err
	}
	write := s.Filesystem.Write
	if cwd != "" {
		write = append(slices.Clone(write), cwd)
	}
	if out.Write, err = abs(write); err != nil {
		return nil, err
	}
	for _, c := range s.Connect {
		_, port, err := ParseConnect(c)
		if err != nil {
			return nil, err
		}
		out.Ports = append(out.Ports, port)
	}
	slices.Sort(out.Ports)
	out.Ports = slices.Compact(out.Ports)
	if s.Limits.AddressSpace != "" {
		if out.Limits.AddressSpace, err = ParseSize(s.Limits.AddressSpace); err != nil {
			return nil, err
		}
	}
	out.Limits.OpenFiles = uint64(max(0, s.Limits.OpenFiles))
	out.Limits.Processes = uint64(max(0, s.Limits.Processes))
	out.Limits.CPUSeconds = uint64(max(0, s.Limits.CPUSeconds))
	return out, nil
}

// ParseConnect splits a host:port destination.
func ParseConnect(s string) (string, uint16, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || host == "" {
		return "", 0, fmt.Errorf("want host:port, such as 127.0.0.1:5432")
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("port must be between 1 and 65535")
	}
	return host, uint16(n), nil
}

// sizeUnits are ParseSize's units, as powers of two.
var sizeUnits = map[string]uint{
	"": 0, "b": 0,
	"k": 10, "kb": 10, "kib": 10,
	"m": 20, "mb": 20, "mib": 20,
	"g": 30, "gb": 30, "gib": 30,
	"t": 40, "tb": 40, "tib": 40,
}

// ParseSize reads a byte count: a whole number with an optional unit, B,
// KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T and KB, MB, GB, TB are
// read as the same), case-insensitive, spaces allowed before the unit.
func ParseSize(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("want a size such as 512MiB or 4GiB")
	}
	n, err := strconv.ParseUint(t[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size is too large")
	}
	sh, ok := sizeUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok {
		return 0, fmt.Errorf("unknown size unit (use B, KiB, MiB, GiB or TiB)")
	}
	if n > math.MaxUint64>>sh {
		return 0, fmt.Errorf("size is too large")
	}
	return n << sh, nil
}

// ResolvePaths makes the sandbox's relative paths relative to the
// configuration file's folder (rel).
func (s *SandboxConfig) ResolvePaths(rel func(string) string) {
	for _, list := range [][]string{s.Filesystem.Read, s.Filesystem.Write} {
		for i := range list {
			list[i] = rel(list[i])
		}
	}
}
