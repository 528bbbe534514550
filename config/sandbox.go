package config

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Sandbox confines the stdio servers it applies to: the top-level sandbox
// is every stdio server's default, and a server's own sandbox block
// replaces the settings it names (docs/config.md, "sandbox"). A plugin
// source's and a hook's own block confine that child. Off unless Mode is
// enforce. The schema is childproc's, so that package hooks can carry it.
type (
	Sandbox           = childproc.SandboxConfig
	SandboxFilesystem = childproc.SandboxFilesystem
	SandboxLimits     = childproc.SandboxLimits
)

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

// StartsUnsandboxedStdio reports whether connecting the servers (server
// alone, when not "") starts a stdio server outside a sandbox: an enabled
// server with a command, of the stdio transport, whose ServerSandbox is not
// enforced. Those are the children a host starts through its long-lived
// supervisor (docs/PERFORMANCE.md, "The supervisor started before
// connect").
func (c *Config) StartsUnsandboxedStdio(server string) bool {
	for name, srv := range c.MCPServers {
		switch {
		case server != "" && name != server, srv == nil, srv.Disabled, srv.Command == "":
		case srv.Type != "" && srv.Type != TransportStdio:
		case c.ServerSandbox(name).Enforced():
		default:
			return true
		}
	}
	return false
}

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
	if s.Mechanism != "" {
		out.Mechanism = s.Mechanism
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

// validateSandbox checks one sandbox block (key is its path).
func validateSandbox(p *problem.List, key string, s *Sandbox) {
	switch s.Mode {
	case "", SandboxEnforce, SandboxOff:
	default:
		p.Add(problem.Key(key, "mode"), "must be enforce or off")
	}
	switch s.Network {
	case "", SandboxNetworkNone, SandboxNetworkLoopback, SandboxNetworkAllow:
	default:
		p.Add(problem.Key(key, "network"), "must be none, loopback or allow")
	}
	switch s.Mechanism {
	case "", childproc.MechanismLandlock, childproc.MechanismAuto:
	case childproc.MechanismBubblewrap:
		if s.Network == SandboxNetworkLoopback || len(s.Connect) > 0 {
			p.Add(problem.Key(key, "mechanism"), "bubblewrap gives a server the whole network or none of it (network none or allow, without connect): network loopback and connect need landlock")
		}
	default:
		p.Add(problem.Key(key, "mechanism"), "must be landlock, bubblewrap or auto")
	}
	for i, c := range s.Connect {
		ckey := problem.Index(problem.Key(key, "connect"), i)
		host, _, err := childproc.ParseConnect(c)
		if err != nil {
			p.Add(ckey, err.Error())
			continue
		}
		if s.Network == SandboxNetworkLoopback && !isLoopbackHost(host) {
			p.Add(ckey, "network loopback allows loopback hosts only (localhost, 127.0.0.0/8, ::1)")
		}
	}
	if len(s.Connect) > 0 && s.Network == SandboxNetworkNone {
		p.Add(problem.Key(key, "connect"), "does not apply under network none")
	}
	for _, list := range []struct {
		name  string
		paths []string
	}{{"read", s.Filesystem.Read}, {"write", s.Filesystem.Write}} {
		for i, path := range list.paths {
			if path == "" || strings.ContainsRune(path, 0) {
				p.Add(problem.Index(problem.Key(problem.Key(key, "filesystem"), list.name), i), "must be a path")
			}
		}
	}
	lkey := problem.Key(key, "limits")
	if s.Limits.AddressSpace != "" {
		if n, err := childproc.ParseSize(s.Limits.AddressSpace); err != nil {
			p.Add(problem.Key(lkey, "addressSpace"), err.Error())
		} else if n < minSandboxAddressSpace {
			p.Add(problem.Key(lkey, "addressSpace"), "must be at least 64MiB")
		}
	}
	if n := s.Limits.OpenFiles; n != 0 && n < minSandboxOpenFiles {
		p.Addf(problem.Key(lkey, "openFiles"), "must be at least %d", minSandboxOpenFiles)
	}
	if s.Limits.Processes < 0 {
		p.Add(problem.Key(lkey, "processes"), "must not be negative")
	}
	if s.Limits.CPUSeconds < 0 {
		p.Add(problem.Key(lkey, "cpuSeconds"), "must not be negative")
	}
}

// validateSandboxes checks the top-level sandbox, each server's block,
// and what they make together for each stdio server.
func (c *Config) validateSandboxes(p *problem.List) {
	validateSandbox(p, "sandbox", &c.Sandbox)
	for _, name := range problem.SortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Sandbox == nil {
			continue
		}
		key := problem.Key(problem.Key("mcpServers", name), "sandbox")
		if srv.URL != "" {
			p.Add(key, "only applies to servers started with command")
			continue
		}
		validateSandbox(p, key, srv.Sandbox)
	}
	for _, name := range problem.SortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Command == "" {
			continue
		}
		validateLoopback(p, problem.Key(problem.Key("mcpServers", name), "sandbox"), c.ServerSandbox(name))
	}
	for _, name := range problem.SortedKeys(c.Sources) {
		src := c.Sources[name]
		if src == nil || src.Sandbox == nil {
			continue
		}
		key := problem.Key(problem.Key("sources", name), "sandbox")
		validateSandbox(p, key, src.Sandbox)
		validateLoopback(p, key, *src.Sandbox)
	}
	hookSandboxes(&c.Hooks, func(key string, sb *Sandbox) {
		validateSandbox(p, key, sb)
		validateLoopback(p, key, *sb)
	})
}

// hookSandboxes calls fn with the key and block of every hook that has a
// sandbox block ("hooks.PreToolUse[0].hooks[1].sandbox").
func hookSandboxes(cfg *hooks.Config, fn func(key string, sb *Sandbox)) {
	for _, ev := range []struct {
		name   string
		groups []hooks.Group
	}{{hooks.EventPreToolUse, cfg.PreToolUse}, {hooks.EventPostToolUse, cfg.PostToolUse}, {hooks.EventPermissionRequest, cfg.PermissionRequest}} {
		for gi, g := range ev.groups {
			for hi, h := range g.Hooks {
				if h.Sandbox != nil {
					fn(fmt.Sprintf("hooks.%s[%d].hooks[%d].sandbox", ev.name, gi, hi), h.Sandbox)
				}
			}
		}
	}
}

// validateLoopback checks what a sandbox that applies to a child makes
// together: network loopback needs its destinations.
func validateLoopback(p *problem.List, key string, s Sandbox) {
	if s.Enforced() && s.Network == SandboxNetworkLoopback && len(s.Connect) == 0 {
		p.Add(problem.Key(key, "connect"),
			"network loopback needs the host:port destinations (the kernel restricts TCP by port, not by address)")
	}
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.IsLoopback()
}
