package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/internal/glob"
)

// ManagedPolicyEnv names the environment variable that moves the managed
// policy file elsewhere (for packaging and tests). Set and not empty, it
// replaces DefaultManagedPolicyPath.
const ManagedPolicyEnv = "AGENTHOST_MANAGED_POLICY"

// DefaultManagedPolicyPath is where an administrator's managed policy
// lives on Unix systems; on Windows it is %ProgramData%\agenthost\managed.yaml.
const DefaultManagedPolicyPath = "/etc/agenthost/managed.yaml"

// Managed is an administrator's managed policy (docs/config.md, "Managed
// policy"): approvals that a user's configuration can add to but never
// relax, and the servers a user's configuration may name at all.
type Managed struct {
	// File is the path the policy was read from.
	File string `json:"-" yaml:"-"`

	Approvals approvals.Managed `json:"approvals" yaml:"approvals"`
	// AllowedServers, when set, lists the only servers a configuration
	// may use: a server that matches no entry is a configuration error.
	// Absent (nil) allows every server; an empty list allows none.
	AllowedServers []ServerPattern `json:"allowedServers" yaml:"allowedServers"`
}

// ServerPattern admits servers: stdio servers by command (and optionally
// arguments), HTTP and SSE servers by URL. Exactly one of Command and URL
// is set; every pattern is a glob of the configuration's one dialect.
type ServerPattern struct {
	// Command matches a stdio server's command as it will be started: a
	// command written as a path is made absolute first (relative to the
	// configuration file), a bare name is matched as written.
	Command string `json:"command" yaml:"command"`
	// Args, when set, must match the server's arguments one by one (the
	// same number of them).
	Args []string `json:"args" yaml:"args"`
	// URL is SCHEME://HOST[:PORT][/PATH]: the scheme, host, port and path
	// are matched separately (case-insensitively for scheme and host), so
	// "*" in the host never reaches into the path. Without a port the
	// pattern matches the scheme's default port only; "*" matches any.
	// Without a path it matches any path. A server URL with user
	// information (user@host) matches nothing.
	URL string `json:"url" yaml:"url"`
}

// ManagedPolicyPath is the managed policy file agenthost reads: the
// ManagedPolicyEnv variable when set, else the system path.
func ManagedPolicyPath() string {
	if p := os.Getenv(ManagedPolicyEnv); p != "" {
		return p
	}
	if runtime.GOOS == "windows" {
		dir := os.Getenv("ProgramData")
		if dir == "" {
			dir = `C:\ProgramData`
		}
		return filepath.Join(dir, "agenthost", "managed.yaml")
	}
	return DefaultManagedPolicyPath
}

// LoadManaged reads and validates the managed policy at path. A file that
// does not exist is no managed policy (nil, nil); a file that exists but
// cannot be read or is invalid is an error, so a broken managed policy
// never silently stops applying. Every error is an [*Error] naming path.
func LoadManaged(path string) (*Managed, error) {
	format, ok := normalizeFormat(filepath.Ext(path))
	if !ok {
		return nil, &Error{File: path, Msg: "managed policy: unsupported file extension (use .yaml, .yml, .json or .toml)"}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	data, err := readConfigFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManaged(data, format, path)
}

// ParseManaged builds a validated managed policy from data in the given
// format; name is used as Managed.File and in error messages. Nothing is
// expanded: a managed policy is taken literally.
func ParseManaged(data []byte, format, name string) (*Managed, error) {
	f, ok := normalizeFormat(format)
	if !ok {
		return nil, &Error{File: name, Msg: fmt.Sprintf("unsupported format %q (use yaml, json or toml)", format)}
	}
	doc, err := decodeDocument(data, f)
	if err != nil {
		return nil, &Error{File: name, Msg: err.Error(), Err: err}
	}
	p := &problems{file: name}
	m := &Managed{}
	(&decoder{problems: p}).decode("", doc, reflect.ValueOf(m).Elem())
	if err := p.err(); err != nil {
		return nil, err
	}
	m.File = name
	validateApprovals(p, &m.Approvals)
	for i, sp := range m.AllowedServers {
		validateServerPattern(p, indexKey("allowedServers", i), sp)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return m, nil
}

func validateServerPattern(p *problems, key string, sp ServerPattern) {
	if (sp.Command == "") == (sp.URL == "") {
		p.add(key, "set exactly one of command or url")
		return
	}
	if sp.Command != "" {
		if err := glob.Validate(sp.Command); err != nil {
			p.addf(childKey(key, "command"), "invalid glob: %v", err)
		}
		for i, a := range sp.Args {
			if err := glob.Validate(a); err != nil {
				p.addf(indexKey(childKey(key, "args"), i), "invalid glob: %v", err)
			}
		}
		return
	}
	if len(sp.Args) > 0 {
		p.add(childKey(key, "args"), "only applies to command patterns")
	}
	if _, err := parseURLPattern(sp.URL); err != nil {
		p.addf(childKey(key, "url"), "%v", err)
	}
}

// urlPattern is a ServerPattern.URL split into its parts.
type urlPattern struct {
	scheme, host, port glob.Pattern
	anyPort, noPort    bool
	path               glob.Pattern
	anyPath            bool
}

// parseURLPattern splits SCHEME://HOST[:PORT][/PATH] and compiles each
// part. The host part may be a bracketed IPv6 address.
func parseURLPattern(s string) (urlPattern, error) {
	var up urlPattern
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok || scheme == "" {
		return up, errors.New(`want SCHEME://HOST[:PORT][/PATH], such as "https://*.example.com/*"`)
	}
	hostport, path := rest, ""
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		hostport, path = rest[:i], rest[i:]
	}
	host, port, hasPort := strings.Cut(hostport, ":")
	if j := strings.IndexByte(hostport, ']'); strings.HasPrefix(hostport, "[") && j > 0 && strings.Contains(hostport[1:j], ":") {
		// A bracketed IPv6 address, not a character class.
		host, port = hostport[1:j], ""
		rest := hostport[j+1:]
		port, hasPort = strings.CutPrefix(rest, ":")
		if !hasPort && rest != "" {
			return up, errors.New("unexpected text after the IPv6 address")
		}
	}
	if hasPort && port == "" {
		return up, errors.New("empty port (leave out the colon, or use * for any port)")
	}
	if host == "" {
		return up, errors.New("no host (use * for any host)")
	}
	var err error
	compile := func(part, v string) glob.Pattern {
		g, e := glob.Compile(strings.ToLower(v))
		if e != nil && err == nil {
			err = fmt.Errorf("invalid glob in the %s: %v", part, e)
		}
		return g
	}
	up.scheme = compile("scheme", scheme)
	up.host = compile("host", host)
	switch port {
	case "":
		up.noPort = true
	case "*":
		up.anyPort = true
	default:
		up.port = compile("port", port)
	}
	if path == "" || path == "/*" {
		up.anyPath = true
	} else {
		up.path = compile("path", path)
	}
	return up, err
}

// defaultPorts are the ports a URL pattern without a port accepts.
var defaultPorts = map[string]string{"http": "80", "https": "443"}

func (up urlPattern) match(u *url.URL) bool {
	scheme := strings.ToLower(u.Scheme)
	if !up.scheme.Match(scheme) || !up.host.Match(strings.ToLower(u.Hostname())) {
		return false
	}
	switch port := u.Port(); {
	case up.anyPort:
	case up.noPort:
		if port != "" && port != defaultPorts[scheme] {
			return false
		}
	default:
		if !up.port.Match(port) {
			return false
		}
	}
	if up.anyPath {
		return true
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	return up.path.Match(strings.ToLower(path))
}

// admitted reports whether the managed policy lets a configuration use
// srv; why says which kind of pattern it failed (for the message, which
// names no configured value).
func (m *Managed) admitted(srv *Server) (ok bool, why string) {
	if m == nil || m.AllowedServers == nil {
		return true, ""
	}
	if srv.URL != "" {
		u, err := url.Parse(srv.URL)
		if err != nil {
			return false, "its url cannot be matched (not an absolute URL, or it carries user information)"
		}
		return m.admitsURL(u)
	}
	for _, sp := range m.AllowedServers {
		if sp.Command == "" || !glob.Match(sp.Command, srv.Command) {
			continue
		}
		if sp.Args == nil {
			return true, ""
		}
		if len(sp.Args) != len(srv.Args) {
			continue
		}
		all := true
		for i, a := range sp.Args {
			if !glob.Match(a, srv.Args[i]) {
				all = false
				break
			}
		}
		if all {
			return true, ""
		}
	}
	return false, "its command (and arguments) match no command pattern"
}

// admitsURL reports whether a url pattern of the managed policy matches
// u; why says what failed, as admitted's does.
func (m *Managed) admitsURL(u *url.URL) (ok bool, why string) {
	if m == nil || m.AllowedServers == nil {
		return true, ""
	}
	if u.Host == "" || u.User != nil {
		return false, "its url cannot be matched (not an absolute URL, or it carries user information)"
	}
	for _, sp := range m.AllowedServers {
		if sp.URL == "" {
			continue
		}
		if up, err := parseURLPattern(sp.URL); err == nil && up.match(u) {
			return true, ""
		}
	}
	return false, "its url matches no url pattern"
}

// checkManaged files a problem for every enabled server the managed policy
// does not allow.
func (c *Config) checkManaged(p *problems) {
	if c.Managed == nil {
		return
	}
	for _, name := range sortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Disabled {
			continue
		}
		if ok, why := c.Managed.admitted(srv); !ok {
			p.addf(childKey("mcpServers", name), "not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", c.Managed.File, why)
		}
	}
}

// AdmitServer reports, as an [*Error] naming the server and the managed
// policy file, a server the managed policy does not allow; nil when it
// is allowed or there is no managed policy.
func (c *Config) AdmitServer(name string) error {
	srv := c.MCPServers[name]
	if c.Managed == nil || srv == nil {
		return nil
	}
	p := &problems{file: c.File}
	if ok, why := c.Managed.admitted(srv); !ok {
		p.addf(childKey("mcpServers", name), "not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", c.Managed.File, why)
	}
	return p.err()
}

// AdmitURL reports, as an [*Error] naming the server and the managed
// policy file, a URL the managed policy does not let the named server
// reach: every redirect of a server reached by url is checked with it
// (docs/config.md, "Redirects"). Nil when the URL is allowed or there is
// no managed policy. The message names no URL (the caller's does).
func (c *Config) AdmitURL(name string, u *url.URL) error {
	if c.Managed == nil {
		return nil
	}
	p := &problems{file: c.File}
	if ok, why := c.Managed.admitsURL(u); !ok {
		p.addf(childKey("mcpServers", name), "a redirect target not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", c.Managed.File, strings.Replace(why, "its url", "the target", 1))
	}
	return p.err()
}

// ApplyManaged reads the managed policy (ManagedPolicyPath) into c.Managed
// and checks c's servers against it. Load and LoadDefault call it; a
// program that builds its Config in code calls it to honour the
// administrator's policy as the CLI does.
func (c *Config) ApplyManaged() error {
	m, err := LoadManaged(ManagedPolicyPath())
	if err != nil {
		return err
	}
	c.Managed = m
	p := &problems{file: c.File}
	c.checkManaged(p)
	return p.err()
}
