// Package allowlist owns the managed policy's allowedServers patterns
// (docs/config.md, "Managed policy"): their syntax and checks, and which
// servers they admit: a stdio server by the file its command names (and
// its arguments and env names), a server reached by url by scheme, host,
// port and path.
package allowlist

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/config/internal/problem"
	"github.com/agenthost/agenthost/internal/childproc"
	"github.com/agenthost/agenthost/internal/glob"
)

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

// Validate files a problem for each mistake of the pattern at key.
func Validate(p *problem.List, key string, sp ServerPattern) {
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

// Server is what a pattern is matched against: a stdio server's command,
// arguments and env names, or the url of a server reached by one.
type Server struct {
	Command string
	Args    []string
	Env     map[string]string
	URL     string
}

// Admitted reports whether patterns (nil: no allowlist, every server)
// let a configuration use srv; why says which kind of pattern it failed (for the message, which
// names no configured value but the names of refused env variables). For
// a stdio server, cf is the file its command names, and exe the file to
// execute: the form of it that an entry matched.
func Admitted(patterns []ServerPattern, srv Server, cf CommandFile) (exe string, ok bool, why string) {
	if patterns == nil {
		return cf.Pick(), true, ""
	}
	if srv.URL != "" {
		u, err := url.Parse(srv.URL)
		if err != nil {
			return "", false, "its url cannot be matched (not an absolute URL, or it carries user information)"
		}
		ok, why := AdmitsURL(patterns, u)
		return "", ok, why
	}
	var refusedEnv []string
	for _, sp := range patterns {
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

// CommandFile is the file a stdio server's command names: clean is its
// absolute path (childproc.LookPath) cleaned lexically, real the path the
// kernel resolves it to (symlinks and ".." followed); either is empty
// when unknown (real when the file does not exist).
type CommandFile struct{ clean, real string }

// Resolve finds the file a stdio server's command names, run from cwd,
// as the host will execute it.
func Resolve(command, cwd string) CommandFile {
	abs, err := childproc.LookPath(command, cwd)
	if err != nil {
		return CommandFile{}
	}
	return FileAt(abs)
}

// FileAt is the file at the absolute path abs.
func FileAt(abs string) CommandFile {
	cf := CommandFile{clean: filepath.Clean(abs)}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		cf.real = real
	}
	return cf
}

// Pick is the file to execute when any form of it may run.
func (cf CommandFile) Pick() string {
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
func (sp ServerPattern) matchCommand(command string, cf CommandFile) (string, bool) {
	if !isPathPattern(sp.Command) {
		return cf.Pick(), glob.Match(sp.Command, command)
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

// AdmitsURL reports whether a url pattern of patterns (nil: no
// allowlist) matches u; why says what failed, as Admitted's does.
func AdmitsURL(patterns []ServerPattern, u *url.URL) (ok bool, why string) {
	if patterns == nil {
		return true, ""
	}
	if u.Host == "" || u.User != nil {
		return false, "its url cannot be matched (not an absolute URL, or it carries user information)"
	}
	for _, sp := range patterns {
		if sp.URL == "" {
			continue
		}
		if up, err := parseURLPattern(sp.URL); err == nil && up.match(u) {
			return true, ""
		}
	}
	return false, "its url matches no url pattern"
}
