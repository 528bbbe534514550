package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

// mcpCommand is `agenthost mcp`, Claude Code's `claude mcp` for
// agenthost's configuration file (docs/cli.md).
func (a *app) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Add, list, show and remove MCP servers of the config file, as `claude mcp` does",
	}
	cmd.AddCommand(a.mcpAddCommand(), a.mcpListCommand(), a.mcpGetCommand(), a.mcpRemoveCommand())
	return cmd
}

// mcpFile is the file `mcp add` and `mcp remove` edit: --config, else the
// file of --scope (project: ./agenthost.yaml; user: the one under
// $XDG_CONFIG_HOME), else the config file in use (the first of the default
// paths that exists), else ./agenthost.yaml, created.
func (a *app) mcpFile(scope string) (string, error) {
	paths := config.DefaultPaths()
	switch scope {
	case "", "local":
	case "project":
		if a.f.ConfigPath != "" {
			return "", cmdutil.UsageErr(errors.New("--scope project and --config name two files: give one"))
		}
		return paths[0], nil
	case "user":
		if a.f.ConfigPath != "" {
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
	if a.f.ConfigPath != "" {
		return a.f.ConfigPath, nil
	}
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return paths[0], nil
}

func (a *app) mcpAddCommand() *cobra.Command {
	var (
		transport, scope string
		env, headers     []string
	)
	cmd := &cobra.Command{
		Use:   "add [flags] NAME COMMAND [ARGS...] | add --transport http|sse NAME URL",
		Short: "Add a server to the config file (stdio: NAME -- COMMAND ARGS; http or sse: NAME URL)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			name, target, rest := args[0], args[1], args[2:]
			e := config.ServerEntry{}
			switch transport {
			case "", "stdio":
				if len(headers) > 0 {
					return cmdutil.UsageErr(errors.New("--header is for http and sse servers"))
				}
				e.Command, e.Args = target, rest
			case "http", "sse":
				if len(rest) > 0 {
					return cmdutil.UsageErr(fmt.Errorf("a %s server takes NAME URL, no more arguments", transport))
				}
				if len(env) > 0 {
					return cmdutil.UsageErr(errors.New("--env is for stdio servers"))
				}
				e.Type, e.URL = config.Transport(transport), target
			default:
				return cmdutil.UsageErr(fmt.Errorf("--transport: %q is not one of stdio, http, sse", transport))
			}
			var err error
			if e.Env, err = keyValues(env, "=", "--env"); err != nil {
				return err
			}
			if e.Headers, err = keyValues(headers, ":", "--header"); err != nil {
				return err
			}
			path, err := a.mcpFile(scope)
			if err != nil {
				return err
			}
			if err := config.AddServer(path, name, e); err != nil {
				if errors.Is(err, config.ErrServerExists) {
					return cmdutil.UsageErr(fmt.Errorf("%s: a server named %q is configured already (agenthost mcp remove %s first)", path, name, name))
				}
				return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
			}
			fmt.Fprintf(a.f.IO.Out, "Added %s MCP server %s to %s\n", transportOf(e.Type), name, path)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVarP(&transport, "transport", "t", "stdio", "stdio, http or sse")
	f.StringArrayVarP(&env, "env", "e", nil, "environment variable KEY=VALUE of a stdio server (repeatable)")
	f.StringArrayVarP(&headers, "header", "H", nil, `HTTP header "Name: value" of an http or sse server (repeatable)`)
	f.StringVarP(&scope, "scope", "s", "local", "which file: local (the config file in use or --config), project (./agenthost.yaml) or user ($XDG_CONFIG_HOME/agenthost/config.yaml)")
	return cmd
}

// keyValues parses KEY<sep>VALUE flags.
func keyValues(list []string, sep, flag string) (map[string]string, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(list))
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, cmdutil.UsageErr(fmt.Errorf("%s: want KEY%sVALUE, got %q", flag, sep, kv))
		}
		if sep == ":" {
			v = strings.TrimSpace(v)
		}
		out[k] = v
	}
	return out, nil
}

func transportOf(t config.Transport) string {
	if t == "" {
		return "stdio"
	}
	return string(t)
}

func (a *app) mcpRemoveCommand() *cobra.Command {
	var scope string
	cmd := &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove a server from the config file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := a.mcpFile(scope)
			if err != nil {
				return err
			}
			if err := config.RemoveServer(path, args[0]); err != nil {
				if errors.Is(err, config.ErrNoSuchServer) {
					return cmdutil.UsageErr(fmt.Errorf("%s: no server named %q", path, args[0]))
				}
				return &cmdutil.ExitErr{Code: cmdutil.ExitUsage, Err: err}
			}
			fmt.Fprintf(a.f.IO.Out, "Removed MCP server %s from %s\n", args[0], path)
			return nil
		},
	}
	cmd.Flags().StringVarP(&scope, "scope", "s", "local", "which file, as for mcp add")
	return cmd
}

func (a *app) mcpListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "Connect to every configured server and list it with its status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.mcpShow(cmd, "")
		},
	}
}

func (a *app) mcpGetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show one configured server and its status",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.mcpShow(cmd, args[0])
		},
	}
}

// mcpShow connects and prints every server (name "") or one, in detail.
func (a *app) mcpShow(cmd *cobra.Command, name string) error {
	a.f.ReportsServers = true
	cfg, err := a.f.ConfigWith(name, "")
	if err != nil {
		return err
	}
	if name != "" {
		cfg.MCPServers = map[string]*config.Server{name: cfg.MCPServers[name]}
	}
	h, err := a.f.Host(cfg, &a.sess)
	if err != nil {
		return err
	}
	if name == "" && len(cfg.MCPServers) > 0 {
		fmt.Fprintln(a.f.IO.Out, "Checking MCP server health...")
		fmt.Fprintln(a.f.IO.Out)
	}
	h.Connect(cmd.Context())
	snaps := h.Servers()
	if name == "" && len(snaps) == 0 {
		fmt.Fprintln(a.f.IO.Out, "No MCP servers configured. Use `agenthost mcp add` to add a server.")
		return nil
	}
	for _, s := range snaps {
		srv := cfg.MCPServers[s.Name]
		if name == "" {
			fmt.Fprintf(a.f.IO.Out, "%s: %s - %s\n", cmdutil.Shown(a.f.IO.Out, s.Name), cmdutil.Shown(a.f.IO.Out, serverTarget(srv)), a.serverStatus(s))
			continue
		}
		a.printServer(s, srv, cfg.File)
	}
	return nil
}

// serverTarget is what a server runs or is reached at.
func serverTarget(s *config.Server) string {
	if s.URL != "" {
		return s.URL + " (" + transportOf(s.Type) + ")"
	}
	return strings.Join(append([]string{s.Command}, s.Args...), " ")
}

func (a *app) serverStatus(s *host.ServerSnapshot) string {
	switch s.Status {
	case host.StatusConnected:
		return fmt.Sprintf("✓ Connected (%s)", cmdutil.Plural(len(s.Tools), "tool"))
	case host.StatusError:
		return "✗ Failed to connect: " + cmdutil.Shown(a.f.IO.Out, a.f.Redact(s.Error))
	default:
		return string(s.Status)
	}
}

// printServer is `mcp get`: the server's settings, values of env and
// headers masked (they often hold secrets), and its status.
func (a *app) printServer(s *host.ServerSnapshot, srv *config.Server, file string) {
	w := a.f.IO.Out
	fmt.Fprintf(w, "%s:\n", cmdutil.Shown(w, s.Name))
	if file != "" {
		fmt.Fprintf(w, "  File: %s\n", cmdutil.Shown(w, file))
	}
	fmt.Fprintf(w, "  Status: %s\n", a.serverStatus(s))
	fmt.Fprintf(w, "  Type: %s\n", transportOf(srv.Type))
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
