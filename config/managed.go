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

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config/internal/allowlist"
	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
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
// arguments and env names), HTTP and SSE servers by URL (docs/config.md,
// "Managed policy").
type ServerPattern = allowlist.ServerPattern

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
		allowlist.Validate(p, problem.Index("allowedServers", i), sp)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// admitted reports whether the managed policy lets a configuration use
// srv, and the file to execute (see allowlist.Admitted).
func (m *Managed) admitted(srv *Server, cf allowlist.CommandFile) (exe string, ok bool, why string) {
	if m == nil {
		return cf.Pick(), true, ""
	}
	return allowlist.Admitted(m.AllowedServers, allowlist.Server{Command: srv.Command, Args: srv.Args, Env: srv.Env, URL: srv.URL}, cf)
}

// resolveCommand finds the file srv's command names, as the host will
// execute it.
func resolveCommand(srv *Server) allowlist.CommandFile {
	return allowlist.Resolve(srv.Command, srv.Cwd)
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
	if ok, why := allowlist.AdmitsURL(c.Managed.AllowedServers, u); !ok {
		p.Addf(problem.Key("mcpServers", name), "a redirect target not allowed by the managed policy %s: %s of its allowedServers (docs/config.md, \"Managed policy\")", c.Managed.File, strings.Replace(why, "its url", "the target", 1))
	}
	return p.Err()
}

// URLAdmitter is AdmitURL for the named server, as a connection's redirect
// check takes it; nil without a managed policy (nothing to check).
func (c *Config) URLAdmitter(name string) func(*url.URL) error {
	if c.Managed == nil {
		return nil
	}
	return func(u *url.URL) error { return c.AdmitURL(name, u) }
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
	exe, ok, why := c.Managed.admitted(srv, allowlist.FileAt(path))
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
