// Package shared is what the mcp verbs share: the file they edit (--scope)
// and the listing of servers with their status.
package shared

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// ScopeUsage is --scope's help of mcp add.
const ScopeUsage = "which file: local (the config file in use or --config), project (./agenthost.yaml) or user ($XDG_CONFIG_HOME/agenthost/config.yaml)"

// File is the file `mcp add` and `mcp remove` edit: --config, else the
// file of --scope (project: ./agenthost.yaml; user: the one under
// $XDG_CONFIG_HOME), else the config file in use (the first of the default
// paths that exists), else ./agenthost.yaml, created.
func File(configPath, scope string) (string, error) {
	paths := config.DefaultPaths()
	switch scope {
	case "", "local":
	case "project":
		if configPath != "" {
			return "", cmdutil.UsageErr(errors.New("--scope project and --config name two files: give one"))
		}
		return paths[0], nil
	case "user":
		if configPath != "" {
			return "", cmdutil.UsageErr(errors.New("--scope user and --config name two files: give one"))
		}
		if len(paths) < 2 {
			return "", cmdutil.UsageErr(errors.New("--scope user: neither XDG_CONFIG_HOME nor the home directory is known"))
		}
		if err := os.MkdirAll(filepath.Dir(paths[1]), 0o700); err != nil {
			return "", err
		}
		return paths[1], nil
	default:
		return "", cmdutil.UsageErr(fmt.Errorf("--scope: %q is not one of local, project, user", scope))
	}
	if configPath != "" {
		return configPath, nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return paths[0], nil
}

// TransportOf is a server's transport as `mcp` names it.
func TransportOf(t config.Transport) string {
	if t == "" {
		return "stdio"
	}
	return string(t)
}

// Show connects and prints every server (name "") or one, in detail.
func Show(ctx context.Context, f *cmdutil.Factory, name string) error {
	f.ReportsServers = true
	cfg, err := f.ConfigWith(name, "")
	if err != nil {
		return err
	}
	if name != "" {
		cfg.MCPServers = map[string]*config.Server{name: cfg.MCPServers[name]}
	}
	h, err := f.Host(cfg, nil)
	if err != nil {
		return err
	}
	out := f.IO.Out
	if name == "" && len(cfg.MCPServers) > 0 {
		fmt.Fprintln(out, "Checking MCP server health...")
		fmt.Fprintln(out)
	}
	h.Connect(ctx)
	snaps := h.Servers()
	if name == "" && len(snaps) == 0 {
		fmt.Fprintln(out, "No MCP servers configured. Use `agenthost mcp add` to add a server.")
		return nil
	}
	for _, s := range snaps {
		srv := cfg.MCPServers[s.Name]
		if name == "" {
			fmt.Fprintf(out, "%s: %s - %s\n", cmdutil.Shown(out, s.Name), cmdutil.Shown(out, serverTarget(srv)), status(f, s))
			continue
		}
		printServer(f, s, srv, cfg.File)
	}
	return nil
}

// serverTarget is what a server runs or is reached at.
func serverTarget(s *config.Server) string {
	if s.URL != "" {
		return s.URL + " (" + TransportOf(s.Type) + ")"
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

func status(f *cmdutil.Factory, s *host.ServerSnapshot) string {
	switch s.Status {
	case host.StatusConnected:
		return fmt.Sprintf("✓ Connected (%s)", cmdutil.Plural(len(s.Tools), "tool"))
	case host.StatusError:
		return "✗ Failed to connect: " + cmdutil.Shown(f.IO.Out, f.Redact(s.Error))
	default:
		return string(s.Status)
	}
}

// printServer is `mcp get`: the server's settings, values of env and
// headers masked (they often hold secrets), and its status.
func printServer(f *cmdutil.Factory, s *host.ServerSnapshot, srv *config.Server, file string) {
	w := f.IO.Out
	fmt.Fprintf(w, "%s:\n", cmdutil.Shown(w, s.Name))
	if file != "" {
		fmt.Fprintf(w, "  File: %s\n", cmdutil.Shown(w, file))
	}
	fmt.Fprintf(w, "  Status: %s\n", status(f, s))
	fmt.Fprintf(w, "  Type: %s\n", TransportOf(srv.Type))
	if srv.URL != "" {
		fmt.Fprintf(w, "  URL: %s\n", cmdutil.Shown(w, srv.URL))
	} else {
		fmt.Fprintf(w, "  Command: %s\n", cmdutil.Shown(w, srv.Command))
		fmt.Fprintf(w, "  Args: %s\n", cmdutil.Shown(w, strings.Join(srv.Args, " ")))
	}
	for _, part := range []struct {
		title string
		m     map[string]string
	}{{"Environment", srv.Env}, {"Headers", srv.Headers}} {
		if len(part.m) == 0 {
			continue
		}
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		fmt.Fprintf(w, "  %s:\n", part.title)
		for _, k := range keys {
			fmt.Fprintf(w, "    %s=(set)\n", cmdutil.Shown(w, k))
		}
	}
	fmt.Fprintf(w, "\nTo remove this server, run: agenthost mcp remove %s\n", cmdutil.Shown(w, s.Name))
}
