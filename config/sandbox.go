package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agenthost/agenthost/childproc"
)

// Sandbox confines the stdio servers it applies to: the top-level sandbox
// is every stdio server's default, and a server's own sandbox block
// replaces the settings it names (docs/config.md, "sandbox"). Off unless
// Mode is enforce.
type Sandbox struct {
	// Mode is enforce or off (the default).
	Mode string `json:"mode" yaml:"mode"`
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

// Sandbox modes and networks.
const (
	SandboxEnforce         = childproc.ModeEnforce
	SandboxOff             = childproc.ModeOff
	SandboxNetworkNone     = string(childproc.NetworkNone)
	SandboxNetworkLoopback = string(childproc.NetworkLoopback)
	SandboxNetworkAllow    = string(childproc.NetworkAllow)
)

// The smallest limits a supervisor can still work under: it shares them
// until it starts the server.
const (
	minSandboxOpenFiles    = 16
	minSandboxAddressSpace = 64 << 20
)

// ServerSandbox is the sandbox that applies to the named server: the
// top-level sandbox with the server's own block over it, setting by
// setting (a list in the server's block replaces the default's list).
func (c *Config) ServerSandbox(name string) Sandbox {
	out := c.Sandbox
	srv := c.MCPServers[name]
	if srv == nil || srv.Sandbox == nil {
		return out
	}
	s := srv.Sandbox
	if s.Mode != "" {
		out.Mode = s.Mode
	}
	if s.Filesystem.Read != nil {
		out.Filesystem.Read = s.Filesystem.Read
	}
	if s.Filesystem.Write != nil {
		out.Filesystem.Write = s.Filesystem.Write
	}
	if s.Network != "" {
		out.Network = s.Network
	}
	if s.Connect != nil {
		out.Connect = s.Connect
	}
	if s.Limits.AddressSpace != "" {
		out.Limits.AddressSpace = s.Limits.AddressSpace
	}
	for _, l := range []struct{ dst, src *int64 }{
		{&out.Limits.OpenFiles, &s.Limits.OpenFiles},
		{&out.Limits.Processes, &s.Limits.Processes},
		{&out.Limits.CPUSeconds, &s.Limits.CPUSeconds},
	} {
		if *l.src != 0 {
			*l.dst = *l.src
		}
	}
	return out
}

// SourceSandbox is the sandbox of the named plugin source: its own block
// only (off when it has none). The top-level sandbox is the stdio servers'
// default and does not apply: a credential plugin needs its secret store's
// path (and often the network), which a server's default would refuse.
func (c *Config) SourceSandbox(name string) Sandbox {
	if src := c.Sources[name]; src != nil && src.Sandbox != nil {
		return *src.Sandbox
	}
	return Sandbox{}
}

// Enforced reports whether the sandbox is on.
func (s Sandbox) Enforced() bool { return s.Mode == SandboxEnforce }

// Child is the kernel sandbox of a server whose working folder is cwd (""
// when it has none): nil when the mode is off. Write gains cwd. The
// sandbox must have been validated.
func (s Sandbox) Child(cwd string) (*childproc.Sandbox, error) {
	if !s.Enforced() {
		return nil, nil
	}
	out := &childproc.Sandbox{Network: childproc.Network(s.Network)}
	if out.Network == "" {
		out.Network = childproc.NetworkNone
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
		_, port, err := parseConnect(c)
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

// validateSandbox checks one sandbox block (key is its path).
func validateSandbox(p *problems, key string, s *Sandbox) {
	switch s.Mode {
	case "", SandboxEnforce, SandboxOff:
	default:
		p.add(childKey(key, "mode"), "must be enforce or off")
	}
	switch s.Network {
	case "", SandboxNetworkNone, SandboxNetworkLoopback, SandboxNetworkAllow:
	default:
		p.add(childKey(key, "network"), "must be none, loopback or allow")
	}
	for i, c := range s.Connect {
		ckey := indexKey(childKey(key, "connect"), i)
		host, _, err := parseConnect(c)
		if err != nil {
			p.add(ckey, err.Error())
			continue
		}
		if s.Network == SandboxNetworkLoopback && !isLoopbackHost(host) {
			p.add(ckey, "network loopback allows loopback hosts only (localhost, 127.0.0.0/8, ::1)")
		}
	}
	if len(s.Connect) > 0 && s.Network == SandboxNetworkNone {
		p.add(childKey(key, "connect"), "does not apply under network none")
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"read", s.Filesystem.Read}, {"write", s.Filesystem.Write}} {
		for i, path := range list.paths {
			if path == "" || strings.ContainsRune(path, 0) {
				p.add(indexKey(childKey(childKey(key, "filesystem"), list.name), i), "must be a path")
			}
		}
	}
	lkey := childKey(key, "limits")
	if s.Limits.AddressSpace != "" {
		if n, err := ParseSize(s.Limits.AddressSpace); err != nil {
			p.add(childKey(lkey, "addressSpace"), err.Error())
		} else if n < minSandboxAddressSpace {
			p.add(childKey(lkey, "addressSpace"), "must be at least 64MiB")
		}
	}
	if n := s.Limits.OpenFiles; n != 0 && n < minSandboxOpenFiles {
		p.addf(childKey(lkey, "openFiles"), "must be at least %d", minSandboxOpenFiles)
	}
	if s.Limits.Processes < 0 {
		p.add(childKey(lkey, "processes"), "must not be negative")
	}
	if s.Limits.CPUSeconds < 0 {
		p.add(childKey(lkey, "cpuSeconds"), "must not be negative")
	}
}

// validateSandboxes checks the top-level sandbox, each server's block,
// and what they make together for each stdio server.
func (c *Config) validateSandboxes(p *problems) {
	validateSandbox(p, "sandbox", &c.Sandbox)
	for _, name := range sortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Sandbox == nil {
			continue
		}
		key := childKey(childKey("mcpServers", name), "sandbox")
		if srv.URL != "" {
			p.add(key, "only applies to servers started with command")
			continue
		}
		validateSandbox(p, key, srv.Sandbox)
	}
	for _, name := range sortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Command == "" {
			continue
		}
		validateLoopback(p, childKey(childKey("mcpServers", name), "sandbox"), c.ServerSandbox(name))
	}
	for _, name := range sortedKeys(c.Sources) {
		src := c.Sources[name]
		if src == nil || src.Sandbox == nil {
			continue
		}
		key := childKey(childKey("sources", name), "sandbox")
		validateSandbox(p, key, src.Sandbox)
		validateLoopback(p, key, *src.Sandbox)
	}
}

// validateLoopback checks what a sandbox that applies to a child makes
// together: network loopback needs its destinations.
func validateLoopback(p *problems, key string, s Sandbox) {
	if s.Enforced() && s.Network == SandboxNetworkLoopback && len(s.Connect) == 0 {
		p.add(childKey(key, "connect"),
			"network loopback needs the host:port destinations (the kernel restricts TCP by port, not by address)")
	}
}

// parseConnect splits a host:port destination.
func parseConnect(s string) (string, uint16, error) {
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

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
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

// resolvePaths makes the sandbox's relative paths relative to the
// configuration file's folder (rel).
func (s *Sandbox) resolvePaths(rel func(string) string) {
	for _, list := range [][]string{s.Filesystem.Read, s.Filesystem.Write} {
		for i := range list {
			list[i] = rel(list[i])
		}
	}
}
