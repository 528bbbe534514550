package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/agenthost/agenthost/config/internal/document"
	"github.com/agenthost/agenthost/config/internal/problem"
)

// DefaultFile is the configuration file looked for in the working directory.
const DefaultFile = "agenthost.yaml"

// Load reads, expands, completes and validates the configuration file at
// path, with AGENTHOST_* overrides applied, and applies the administrator's
// managed policy (see ApplyManaged). The format follows the
// extension: .yaml/.yml, .json or .toml. Every error is an [*Error].
func Load(path string) (*Config, error) {
	format, ok := document.Format(filepath.Ext(path))
	if !ok {
		return nil, &Error{File: path, Msg: "unsupported file extension (use .yaml, .yml, .json or .toml)"}
	}
	data, err := document.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cfg, err := build(data, format, path, true)
	if err != nil {
		return nil, err
	}
	cfg.resolvePaths(filepath.Dir(path))
	if err := cfg.applyLocal(); err != nil {
		return nil, err
	}
	if err := cfg.ApplyManaged(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// resolvePaths makes the file paths a config names relative to the config
// file's folder, as a user reading the file expects: a stdio command written
// as a path (./bin/server; a bare name is looked up in PATH), cwd, `file:`
// bindings and plugin binaries. Absolute paths are kept.
func (c *Config) resolvePaths(dir string) {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	for _, s := range c.MCPServers {
		if s == nil {
			continue
		}
		if strings.ContainsRune(s.Command, filepath.Separator) {
			s.Command = rel(s.Command)
		}
		s.Cwd = rel(s.Cwd)
		if s.Sandbox != nil {
			s.Sandbox.ResolvePaths(rel)
		}
	}
	c.Sandbox.ResolvePaths(rel)
	hookSandboxes(&c.Hooks, func(_ string, sb *Sandbox) { sb.ResolvePaths(rel) })
	for _, src := range c.Sources {
		if src != nil {
			src.Plugin = rel(src.Plugin)
			if src.Sandbox != nil {
				src.Sandbox.ResolvePaths(rel)
			}
		}
	}
	c.Serve.TLS.Cert, c.Serve.TLS.Key, c.Serve.TLS.ClientCA = rel(c.Serve.TLS.Cert), rel(c.Serve.TLS.Key), rel(c.Serve.TLS.ClientCA)
	c.Serve.Replica.SessionKeyFile = rel(c.Serve.Replica.SessionKeyFile)
	c.Pins.File = rel(c.Pins.File)
	for i := range c.Bindings {
		for name, pb := range c.Bindings[i].Params {
			if pb.File != "" {
				pb.File = rel(pb.File)
				c.Bindings[i].Params[name] = pb
			}
		}
	}
}

// LoadDefault loads the configuration the CLI uses. A non-empty
// explicitPath (--config) must exist. Otherwise the first existing file of
// [DefaultPaths] is loaded; when there is none, the result is an empty,
// valid configuration with AGENTHOST_* overrides and defaults applied, and
// its File is "". Either way the administrator's managed policy applies
// (see ApplyManaged).
func LoadDefault(explicitPath string) (*Config, error) {
	if explicitPath != "" {
		return Load(explicitPath)
	}
	for _, path := range DefaultPaths() {
		info, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			// Unreadable is not the same as absent: say so rather than
			// silently running without the user's configuration.
			return nil, &Error{File: path, Msg: "cannot read configuration: " + document.DescribeReadError(err), Err: err}
		}
		if info.IsDir() {
			return nil, &Error{File: path, Msg: "is a directory, not a configuration file"}
		}
		return Load(path)
	}
	cfg, err := build(nil, FormatYAML, "", true)
	if err != nil {
		return nil, err
	}
	if err := cfg.ApplyManaged(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// DefaultPaths lists the files LoadDefault looks for, in order:
// ./agenthost.yaml, then $XDG_CONFIG_HOME/agenthost/config.yaml (with
// XDG_CONFIG_HOME defaulting to ~/.config). The second is left out when
// neither XDG_CONFIG_HOME nor the home directory is known.
func DefaultPaths() []string {
	paths := []string{DefaultFile}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) { // the XDG spec says to ignore relative paths
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return paths
		}
		dir = filepath.Join(home, ".config")
	}
	return append(paths, filepath.Join(dir, "agenthost", "config.yaml"))
}

// Parse builds a validated configuration from data in the given format
// ("yaml", "yml", "json" or "toml"). name is used as Config.File and in
// error messages. ${VAR} references are expanded from the process
// environment, but AGENTHOST_* overrides are not applied: the result
// depends only on data and the variables it names.
func Parse(data []byte, format string, name string) (*Config, error) {
	f, ok := document.Format(format)
	if !ok {
		return nil, &Error{File: name, Msg: fmt.Sprintf("unsupported format %q (use yaml, json or toml)", format)}
	}
	return build(data, f, name, false)
}

// build runs the pipeline: decode, overrides, expansion, defaults, checks.
// Overrides come before expansion so that they can switch a server on or
// off, and are recorded so that their values are not expanded.
func build(data []byte, format, file string, withEnv bool) (*Config, error) {
	doc, err := document.Parse(data, format)
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error(), Err: err}
	}
	p := &problem.List{File: file}
	cfg := &Config{}
	(&document.Decoder{Problems: p}).Decode("", doc, reflect.ValueOf(cfg).Elem())
	if err := p.Err(); err != nil {
		return nil, err // types are wrong; later checks would only add noise
	}
	cfg.File = file
	var overridden map[string]bool
	if withEnv {
		overridden = applyEnvOverrides(cfg, p)
	}
	expandConfig(cfg, os.LookupEnv, overridden, p)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if withEnv {
		applyConventionalEnv(cfg, os.LookupEnv)
	}
	cfg.ApplyDefaults()
	cfg.applyPermissions()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// applyPermissions adds the rules of Claude Code's permission lists.
func (c *Config) applyPermissions() {
	rules, ignored := PermissionRules("permissions", c.Permissions)
	c.Approvals.Rules = append(c.Approvals.Rules, rules...)
	c.IgnoredPermissions = ignored
}
