// Package add is `agenthost mcp add`: a server added to the config file.
package add

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/mcp/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
)

// AddOptions are `mcp add`'s.
type AddOptions struct {
	IO         *cmdutil.IOStreams
	ConfigPath string
	Name       string
	Entry      config.ServerEntry
	Scope      string
}

// NewCmdAdd is `agenthost mcp add`; runF replaces addRun (tests).
func NewCmdAdd(f *cmdutil.Factory, runF func(*AddOptions) error) *cobra.Command {
	opts := &AddOptions{IO: f.IO}
	var transport string
	var env, headers []string
	cmd := &cobra.Command{
		Use:   "add [flags] NAME COMMAND [ARGS...] | add --transport http|sse NAME URL",
		Short: "Add a server to the config file (stdio: NAME -- COMMAND ARGS; http or sse: NAME URL)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.ConfigPath = f.ConfigPath
			opts.Name = args[0]
			e, err := entry(transport, args[1], args[2:], env, headers)
			if err != nil {
				return err
			}
			opts.Entry = e
			return cmdutil.Run(opts, runF, addRun)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&transport, "transport", "t", "stdio", "stdio, http or sse")
	fl.StringArrayVarP(&env, "env", "e", nil, "environment variable KEY=VALUE of a stdio server (repeatable)")
	fl.StringArrayVarP(&headers, "header", "H", nil, `HTTP header "Name: value" of an http or sse server (repeatable)`)
	fl.StringVarP(&opts.Scope, "scope", "s", "local", shared.ScopeUsage)
	return cmd
}

// entry is the server entry the arguments and flags describe.
func entry(transport, target string, rest, env, headers []string) (config.ServerEntry, error) {
	e := config.ServerEntry{}
	switch transport {
	case "", "stdio":
		if len(headers) > 0 {
			return e, cmdutil.UsageErr(errors.New("--header is for http and sse servers"))
		}
		e.Command, e.Args = target, rest
	case "http", "sse":
		if len(rest) > 0 {
			return e, cmdutil.UsageErr(fmt.Errorf("a %s server takes NAME URL, no more arguments", transport))
		}
		if len(env) > 0 {
			return e, cmdutil.UsageErr(errors.New("--env is for stdio servers"))
		}
		e.Type, e.URL = config.Transport(transport), target
	default:
		return e, cmdutil.UsageErr(fmt.Errorf("--transport: %q is not one of stdio, http, sse", transport))
	}
	var err error
	if e.Env, err = keyValues(env, "=", "--env"); err != nil {
		return e, err
	}
	if e.Headers, err = keyValues(headers, ":", "--header"); err != nil {
		return e, err
	}
	return e, nil
}

func addRun(opts *AddOptions) error {
	path, err := shared.File(opts.ConfigPath, opts.Scope)
	if err != nil {
		return err
	}
	if err := config.AddServer(path, opts.Name, opts.Entry); err != nil {
		if errors.Is(err, config.ErrServerExists) {
			return cmdutil.UsageErr(fmt.Errorf("%s: a server named %q is configured already (agenthost mcp remove %s first)", path, opts.Name, opts.Name))
		}
		return cmdutil.UsageErr(err)
	}
	fmt.Fprintf(opts.IO.Out, "Added %s MCP server %s to %s\n", shared.TransportOf(opts.Entry.Type), opts.Name, path)
	return nil
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
