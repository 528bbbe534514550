package cmdutil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

// Target is what a command connects to: the configured servers (one of
// them named, or all), or an ad-hoc server at a URL (`--url`, no config).
type Target struct {
	// Server is the server named on the command line ("" for none); it
	// must be configured. ServerFlag names it in the message ("--server: ").
	Server, ServerFlag string
	// URL is --url; Transport is --transport and TransportSet says it was
	// given (an unset one falls back from streamable HTTP to legacy SSE).
	URL, Transport string
	TransportSet   bool
	// Check runs once the configuration is loaded, before the host is
	// built (the checks of the command's own flags, in the order the
	// command reports them).
	Check func() error
}

// Connect is the preamble of the commands that open a session: the
// configuration (or the ad-hoc server's), the host, the ad-hoc fallback to
// legacy SSE, and the session s describes.
func (f *Factory) Connect(ctx context.Context, t Target, s *SessionFlags) (*host.Host, *host.Session, error) {
	cfg, err := f.ConfigFor(t)
	if err != nil {
		return nil, nil, err
	}
	// Its start overlaps the checks', the host's and the session's.
	f.PrestartSupervisor(cfg, t.Server)
	if t.Check != nil {
		if err := t.Check(); err != nil {
			return nil, nil, err
		}
	}
	h, err := f.HostFor(ctx, cfg, t, s)
	if err != nil {
		return nil, nil, err
	}
	sess, err := f.Session(h, s)
	if err != nil {
		return nil, nil, err
	}
	return h, sess, nil
}

// ConfigFor is the configuration of t: the ad-hoc server's for a URL,
// else the config file's, with t.Server configured.
func (f *Factory) ConfigFor(t Target) (*config.Config, error) {
	if t.URL == "" {
		return f.ConfigWith(t.Server, t.ServerFlag)
	}
	cfg, err := AdHocConfig(t.URL, t.Transport)
	if err != nil {
		return nil, UsageErr(err)
	}
	return cfg, nil
}

// HostFor builds the host for cfg and, for an ad-hoc server whose
// --transport was not given, falls back to legacy SSE (see adHocFallback).
func (f *Factory) HostFor(ctx context.Context, cfg *config.Config, t Target, s *SessionFlags) (*host.Host, error) {
	h, err := f.Host(cfg, s)
	if err != nil {
		return nil, err
	}
	if t.URL != "" && !t.TransportSet {
		if h, err = f.adHocFallback(ctx, h, t.URL, s); err != nil {
			return nil, UsageErr(err)
		}
	}
	return h, nil
}

// AdHocServer is the name of the server of `call --url` and `tools --url`.
const AdHocServer = compose.AdHocServer

// TransportUsage is the --transport flag's help: no default is shown,
// since an unset flag is not the same as "http" (it falls back to SSE).
const TransportUsage = "transport for --url: http or sse (default: streamable HTTP, falling back to legacy SSE when the server answers a POST as a legacy one)"

// AdHocConfig is compose.AdHocConfig, its bad parameters named as the
// flags that gave them (--url, --transport).
func AdHocConfig(rawURL, transport string) (*config.Config, error) {
	cfg, err := compose.AdHocConfig(rawURL, transport, os.Getenv)
	var bad *compose.AdHocError
	if errors.As(err, &bad) {
		err = errors.New("--" + bad.Error())
	}
	return cfg, err
}

// adHocFallback is compose.ConnectAdHoc, saying on stderr which transport
// worked when it fell back.
func (f *Factory) adHocFallback(ctx context.Context, h *host.Host, rawURL string, s *SessionFlags) (*host.Host, error) {
	// The Factory closes the SSE host; ConnectAdHoc closes the first.
	c, err := compose.ConnectAdHoc(ctx, h, rawURL, os.Getenv, func(cfg *config.Config) (*host.Host, error) { return f.Host(cfg, s) })
	if err != nil {
		return nil, err
	}
	switch c.Fallback {
	case compose.FallbackSSE:
		fmt.Fprintln(f.IO.ErrOut, "agenthost: the server speaks the legacy HTTP+SSE transport; connected with --transport sse")
	case compose.FallbackFailed:
		fmt.Fprintf(f.IO.ErrOut, "agenthost: streamable HTTP failed (%s) and so did legacy SSE; pass --transport http or sse to choose\n", f.Redact(c.HTTPError))
	}
	return c.Host, nil
}

// ConnectServers connects h and returns the names of its connected
// servers (only server when it is set), reporting each one that is not
// connected on stderr, followed by why it matters (note), and counting it.
func (f *Factory) ConnectServers(ctx context.Context, h *host.Host, server, note string) (names []string, failed int) {
	h.Connect(ctx)
	for _, snap := range h.Servers() {
		if server != "" && snap.Name != server {
			continue
		}
		if snap.Status != host.StatusConnected {
			fmt.Fprintf(f.IO.ErrOut, "agenthost: %s: %s %s%s\n", snap.Name, snap.Status, f.Redact(snap.Error), note)
			failed++
			continue
		}
		names = append(names, snap.Name)
	}
	return names, failed
}

// ArgsObject reads --args: "" is none, anything else must be a JSON
// object.
func ArgsObject(argsJSON string) (json.RawMessage, error) {
	if argsJSON == "" {
		return nil, nil
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
		return nil, errors.New("--args: not a JSON object")
	}
	return json.RawMessage(argsJSON), nil
}

// AdHocFlags are --url and --transport: an ad-hoc server, no config.
type AdHocFlags struct {
	URL, Transport string
	// TransportSet says --transport was given (an unset one falls back
	// from streamable HTTP to legacy SSE).
	TransportSet bool
}

// AddAdHocFlags adds --url (described by urlUsage) and --transport to
// cmd, read into a; call a.Parsed(cmd) once the flags are parsed.
func AddAdHocFlags(cmd *cobra.Command, a *AdHocFlags, urlUsage string) {
	cmd.Flags().StringVar(&a.URL, "url", "", urlUsage)
	cmd.Flags().StringVar(&a.Transport, "transport", "", TransportUsage)
}

// Parsed records whether --transport was given.
func (a *AdHocFlags) Parsed(cmd *cobra.Command) { a.TransportSet = cmd.Flags().Changed("transport") }

// Target is the target of these flags and server.
func (a AdHocFlags) Target(server, serverFlag string) Target {
	return Target{Server: server, ServerFlag: serverFlag, URL: a.URL, Transport: a.Transport, TransportSet: a.TransportSet}
}
