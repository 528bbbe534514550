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
	"slices"
	"strings"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/childproc"
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

	Approvals rules.Managed `json:"approvals" yaml:"approvals"`
	// AllowedServers, when set, lists the only servers a configuration
	// may use: a server that matches no entry is a configuration error.
	// Absent (nil) allows every server; an empty list allows none.
	AllowedServers []ServerPattern `json:"allowedServers" yaml:"allowedServers"`
}

// ServerPattern admits servers: stdio servers by command (and optionally
// arguments), HTTP and SSE servers by URL. Exactly one of Command and URL
// is set; every pattern is a glob of the configuration's one dialect.
type ServerPattern struct {
	// Command matches a stdio server's command. A pattern with a "/" is a
	// path pattern: it is matched (glob.MatchPath: wildcards never cross
	// a "/") against the absolute, cleaned path of the file that will run
	// (childproc.LookPath: relative to the server's cwd, a bare name
	// looked up in PATH) and against that path with its symlinks
	// resolved; the host then executes the resolved file. A pattern
	// without a "/" matches the command as written (a bare name).
	Command string `json:"command" yaml:"command"`
	// Args, when set, must match the server's arguments one by one (the
	// same number of them). An argument pattern that starts with "/" is a
	// path pattern: the argument must be a clean absolute path (no "..",
	// ".", or doubled "/") and wildcards never cross a "/".
	Args []string `json:"args" yaml:"args"`
	// Env names the environment variables (names or globs of names, such
	// as "GITHUB_*") a configuration may set for a server this entry
	// admits (its env key); any other is refused. A variable such as
	// PYTHONPATH, NODE_OPTIONS or LD_PRELOAD changes what an admitted
	// command executes, so none is allowed unless named here. Only for
	// command patterns.
	Env []string `json:"env" yaml:"env"`
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
	format, ok := document.Format(filepath.Ext(path))
	if !ok {
		return nil, &Error{File: path, Msg: "managed policy: unsupported file extension (use .yaml, .yml, .json or .toml)"}
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	data, err := document.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManaged(data, format, path)
}

// ParseManaged builds a validated managed policy from data in the given
// format; name is used as Managed.File and in error messages. Nothing is
// expanded: a managed policy is taken literally.
func ParseManaged(data []byte, format, name string) (*Managed, error) {
	f, ok := document.Format(format)
	if !ok {
		return nil, &Error{File: name, Msg: fmt.Sprintf("unsupported format %q (use yaml, json or toml)", format)}
	}
	doc, err := document.Parse(data, f)
	if err != nil {
		return nil, &Error{File: name, Msg: err.Error(), Err: err}
	}
	p := &problem.List{File: name}
	m := &Managed{}
	(&document.Decoder{Problems: p}).Decode("", doc, reflect.ValueOf(m).Elem())
	if err := p.Err(); err != nil {
		return nil, err
	}
	m.File = name
	validateApprovals(p, &m.Approvals)
	for i, sp := range m.AllowedServers {
		validateServerPattern(p, problem.Index("allowedServers", i), sp)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func validateServerPattern(p *problem.List, key string, sp ServerPattern) {
	if (sp.Command == "") == (sp.URL == "") {
		p.Add(key, "set exactly one of command or url")
		return
	}
	if sp.Command != "" {
		if err := glob.Validate(sp.Command); err != nil {
			p.Addf(problem.Key(key, "command"), "invalid glob: %v", err)
		}
		for i, a := range sp.Args {
			if err := glob.Validate(a); err != nil {
				p.Addf(problem.Index(problem.Key(key, "args"), i), "invalid glob: %v", err)
			}
		}
		for i, name := range sp.Env {
			if err := glob.Validate(name); err != nil || strings.ContainsAny(name, "=\x00") {
				p.Add(problem.Index(problem.Key(key, "env"), i), "must be an environment variable name or a glob of names (not empty, no '=')")
			}
		}
		return
	}
	if len(sp.Args) > 0 {
		p.Add(problem.Key(key, "args"), "only applies to command patterns")
	}
	if len(sp.Env) > 0 {
		p.Add(problem.Key(key, "env"), "only applies to command patterns")
	}
	if _, err := parseURLPattern(sp.URL); err != nil {
		p.Addf(problem.Key(key, "url"), "%v", err)
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
// names no configured value but the names of refused env variables). For
// a stdio server, cf is the file its command names, and exe the file to
// execute: the form of it that an entry matched.
func (m *Managed) admitted(srv *Server, cf commandFile) (exe string, ok bool, why string) {
	if m == nil || m.AllowedServers == nil {
		return cf.pick(), true, ""
	}
	if srv.URL != "" {
		u, err := url.Parse(srv.URL)
		if err != nil {
			return "", false, "its url cannot be matched (not an absolute URL, or it carries user information)"
		}
		ok, why := m.admitsURL(u)
		return "", ok, why
	}
	var refusedEnv []string
	for _, sp := range m.AllowedServers {
		if sp.Command == "" || !sp.matchArgs(srv.Args) {
			continue
		}
		exe, ok := sp.matchCommand(srv.Command, cf)
		if !ok {
			continue
		}
		extra := unlistedEnv(srv.Env, sp.Env)
		if len(extra) == 0 {
			return exe, true, ""
		}
		if refusedEnv == nil {
			refusedEnv = extra
		}
	}
	if refusedEnv != nil {
		return "", false, fmt.Sprintf("its command is admitted, but it sets env %s, which no admitting entry lists in its env (a variable such as PYTHONPATH, NODE_OPTIONS or LD_PRELOAD would change what the admitted command executes)", strings.Join(refusedEnv, ", "))
	}
	return "", false, "its command (and arguments) match no command pattern"
}

// commandFile is the file a stdio server's command names: clean is its
// absolute path (childproc.LookPath) cleaned lexically, real the path the
// kernel resolves it to (symlinks and ".." followed); either is empty
// when unknown (real when the file does not exist).
type commandFile struct{ clean, real string }

// resolveCommand finds the file srv's command names, as the host will
// execute it.
func resolveCommand(srv *Server) commandFile {
	abs, err := childproc.LookPath(srv.Command, srv.Cwd)
	if err != nil {
		return commandFile{}
	}
	return fileAt(abs)
}

func fileAt(abs string) commandFile {
	cf := commandFile{clean: filepath.Clean(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		cf.real = real
	}
	return cf
}

// pick is the file to execute when any form of it may run.
func (cf commandFile) pick() string {
	if cf.real != "" {
		return cf.real
	}
	return cf.clean
}

// isPathPattern reports a command pattern matched as a file path.
func isPathPattern(p string) bool { return strings.Contains(p, "/") }

// matchCommand reports whether sp's command pattern admits a server's
// command, and the file to execute: for a path pattern the form of it the
// pattern matched (its real path first, else its cleaned path, whose
// folders the pattern names), so that what runs is what was matched.
func (sp ServerPattern) matchCommand(command string, cf commandFile) (string, bool) {
	if !isPathPattern(sp.Command) {
		return cf.pick(), glob.Match(sp.Command, command)
	}
	if cf.real != "" && glob.MatchPath(sp.Command, cf.real) {
		return cf.real, true
	}
	if cf.clean != "" && glob.MatchPath(sp.Command, cf.clean) {
		return cf.clean, true
	}
	return "", false
}

func (sp ServerPattern) matchArgs(args []string) bool {
	if sp.Args == nil {
		return true
	}
	if len(sp.Args) != len(args) {
		return false
	}
	for i, a := range sp.Args {
		if strings.HasPrefix(a, "/") {
			if args[i] != filepath.Clean(args[i]) || !glob.MatchPath(a, args[i]) {
				return false
			}
			continue
		}
		if !glob.Match(a, args[i]) {
			return false
		}
	}
	return true
}

// unlistedEnv is the sorted names of env that no glob of allowed matches.
func unlistedEnv(env map[string]string, allowed []string) []string {
	var extra []string
	for name := range env {
		if !slices.ContainsFunc(allowed, func(p string) bool { return glob.Match(p, name) }) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	return extra
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
func (c *Config) checkManaged(p *problem.List) {
	if c.Managed == nil {
		return
	}
	for _, name := range problem.SortedKeys(c.MCPServers) {
		srv := c.MCPServers[name]
		if srv == nil || srv.Disabled {
			continue
		}
		if _, ok, why := c.Managed.admitted(srv, resolveCommand(srv)); !ok {
			c.Managed.refuse(p, name, why)
		}
		if cmd := assertionCommand(srv); cmd != nil {
			if _, ok, why := c.Managed.admitted(cmd, resolveCommand(cmd)); !ok {
				c.Managed.refuseAssertion(p, name, why)
			}
		}
	}
}

// assertionCommand is the jwt-bearer grant's assertionCommand of srv as
// the stdio server it is checked as (its command and assertionArgs, no
// env, run from the current folder); nil when srv runs none.
func assertionCommand(srv *Server) *Server {
	if srv.OAuth == nil || srv.OAuth.AssertionCommand == "" || srv.URL == "" {
		return nil
	}
	return &Server{Command: srv.OAuth.AssertionCommand, Args: srv.OAuth.AssertionArgs}
}

func (m *Managed) refuseAssertion(p *problem.List, name, why string) {
	p.Addf(problem.Key(problem.Key("mcpServers", name), "oauth")+".assertionCommand", "not allowed by the managed policy %s: %s of its allowedServers: a command agenthost executes for a server is admitted as a stdio server's is (docs/config.md, \"Managed policy\")", m.File, why)
}

// AdmitAssertionCommand checks the jwt-bearer grant's assertionCommand of
// server name against the managed allowlist, with path as the file it
// names (childproc.LookPath, as the host resolved it to run it): it must
// match a command pattern of allowedServers, with its assertionArgs, as
// a stdio server's command must, and the file to execute is the form of
// path the entry matched. Without a managed allowlist it returns path. A
// refusal is an [*Error] naming the key and the managed policy file.
func (c *Config) AdmitAssertionCommand(name, path string) (string, error) {
	srv := c.MCPServers[name]
	if !c.HasServerAllowlist() || srv == nil {
		return path, nil
	}
	cmd := assertionCommand(srv)
	if cmd == nil {
		return path, nil
	}
	return c.admitFile(name, cmd, path, c.Managed.refuseAssertion)
}

func (m *Managed) refuse(p *problem.List, name, why string) {
	p.Addf(problem.Key("mcpServers", name), "not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", m.File, why)
}

// AdmitServer reports, as an [*Error] naming the server and the managed
// policy file, a server the managed policy does not allow; nil when it
// is allowed or there is no managed policy.
func (c *Config) AdmitServer(name string) error {
	srv := c.MCPServers[name]
	if c.Managed == nil || srv == nil {
		return nil
	}
	p := &problem.List{File: c.File}
	if _, ok, why := c.Managed.admitted(srv, resolveCommand(srv)); !ok {
		c.Managed.refuse(p, name, why)
	}
	return p.Err()
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
	p := &problem.List{File: c.File}
	if ok, why := c.Managed.admitsURL(u); !ok {
		p.Addf(problem.Key("mcpServers", name), "a redirect target not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", c.Managed.File, strings.Replace(why, "its url", "the target", 1))
	}
	return p.Err()
}

// AdmitExecutable checks stdio server name against the managed policy with
// path as the file its command names (childproc.LookPath, as the host
// resolved it to start it), and returns the file to execute: the form of
// path an entry matched (its real path, symlinks resolved, unless only
// its cleaned path matched), so that what runs is what was matched.
// Without a managed allowlist it returns path. A refusal is an [*Error]
// as AdmitServer's.
func (c *Config) AdmitExecutable(name, path string) (string, error) {
	srv := c.MCPServers[name]
	if !c.HasServerAllowlist() || srv == nil {
		return path, nil
	}
	return c.admitFile(name, srv, path, c.Managed.refuse)
}

// admitFile checks the file srv's command names (path) against the
// managed allowlist and returns the form of it to execute; refuse files
// the refusal.
func (c *Config) admitFile(name string, srv *Server, path string, refuse func(p *problem.List, name, why string)) (string, error) {
	exe, ok, why := c.Managed.admitted(srv, fileAt(path))
	if !ok {
		p := &problem.List{File: c.File}
		refuse(p, name, why)
		return "", p.Err()
	}
	return exe, nil
}

// HasServerAllowlist reports whether a managed allowlist applies (AdmitExecutable
// then decides what a stdio server executes).
func (c *Config) HasServerAllowlist() bool {
	return c.Managed != nil && c.Managed.AllowedServers != nil
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
	p := &problem.List{File: c.File}
	c.checkManaged(p)
	return p.Err()
}
