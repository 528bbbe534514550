package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

func (a *app) callCommand() *cobra.Command {
	var (
		argsJSON  string
		asJSON    bool
		serverURL string
		transport string
	)
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL | call --url URL TOOL",
		Short: "Call one tool, through the same checks as an agent session",
		RunE: func(cmd *cobra.Command, args []string) error {
			// The call's own error says what failed: no log lines about
			// the server beside it.
			a.reportsServers = true
			fail := func(kind host.Kind, code int, err error) error {
				msg := a.redact(err.Error())
				if asJSON {
					_ = writeJSON(a.stdout, errorJSON(kind, msg))
					return &exitErr{code: code, err: err, printed: true}
				}
				return &exitErr{code: code, err: errors.New(msg)}
			}
			var cfg *config.Config
			var server, tool string
			switch {
			case serverURL != "":
				if len(args) != 1 {
					return fail(host.KindConfig, exitUsage, errors.New("usage: call --url URL [--transport http|sse] TOOL"))
				}
				var err error
				server, tool = adHocServer, args[0]
				if cfg, err = adHocConfig(serverURL, transport); err != nil {
					return fail(host.KindConfig, exitUsage, err)
				}
			default:
				if len(args) != 2 {
					return fail(host.KindConfig, exitUsage, errors.New("usage: call SERVER TOOL [--args JSON]"))
				}
				server, tool = args[0], args[1]
				var err error
				if cfg, err = a.loadConfig(); err != nil {
					var ee *exitErr
					if errors.As(err, &ee) {
						return fail(host.KindConfig, exitUsage, ee.err)
					}
					return err
				}
				if _, ok := cfg.MCPServers[server]; !ok {
					return fail(host.KindConfig, exitUsage, fmt.Errorf("no server named %q in the config", server))
				}
			}
			var arguments json.RawMessage
			if argsJSON != "" {
				var obj map[string]any
				if err := json.Unmarshal([]byte(argsJSON), &obj); err != nil || obj == nil {
					return fail(host.KindConfig, exitUsage, errors.New("--args: not a JSON object"))
				}
				arguments = json.RawMessage(argsJSON)
			}
			h, err := a.newHost(cfg)
			if err != nil {
				return fail(host.KindConfig, exitUsage, err)
			}
			if serverURL != "" && !cmd.Flags().Changed("transport") {
				if h, err = a.adHocFallback(cmd.Context(), h, serverURL); err != nil {
					return fail(host.KindConfig, exitUsage, err)
				}
			}
			sess, err := a.newSession(h)
			if err != nil {
				return fail(host.KindConfig, exitUsage, err)
			}
			res, err := sess.CallTool(cmd.Context(), server, tool, arguments)
			if err != nil {
				kind := host.KindOf(err)
				return fail(kind, exitCodeFor(kind), err)
			}
			if asJSON {
				content := res.Result.Content
				if content == nil {
					content = []mcp.Content{}
				}
				doc := map[string]any{
					"server":            res.Server,
					"tool":              res.Tool,
					"isError":           res.IsError(),
					"content":           content,
					"structuredContent": res.Result.StructuredContent,
					"decision":          res.Decision,
				}
				if len(res.Labels) > 0 {
					doc["labels"] = res.Labels
				}
				if err := writeJSON(a.stdout, doc); err != nil {
					return err
				}
			} else {
				for _, l := range res.Labels {
					fmt.Fprintf(a.stderr, "agenthost: the result is labelled %s (%s)\n", l.Label, l.Source)
				}
				printContent(a, res.Result)
			}
			if res.IsError() {
				return &exitErr{code: exitToolError, printed: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "tool arguments as a JSON object")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the result or error document described in docs/cli.md)")
	cmd.Flags().StringVar(&serverURL, "url", "", "call an ad-hoc server at this URL (no config)")
	cmd.Flags().StringVar(&transport, "transport", "", transportUsage)
	a.addSessionFlags(cmd)
	return cmd
}

// printContent prints a tool result for a person: text as is (escaped on a
// terminal), anything else summarised with its type.
func printContent(a *app, r *mcp.CallToolResult) {
	for _, c := range r.Content {
		fmt.Fprintln(a.stdout, shown(a.stdout, host.ContentText(c)))
	}
	if r.StructuredContent != nil && len(r.Content) == 0 {
		_ = writeJSON(a.stdout, r.StructuredContent)
	}
}

// adHocServer is the name of the server of `call --url` and `tools --url`.
const adHocServer = "url"

// adHocConfig is the config of an ad-hoc server at rawURL.
// transportUsage is the --transport flag's help: no default is shown,
// since an unset flag is not the same as "http" (it falls back to SSE).
const transportUsage = "transport for --url: http or sse (default: streamable HTTP, falling back to legacy SSE when the server answers a POST as a legacy one)"

func adHocConfig(rawURL, transport string) (*config.Config, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--url: %q is not an http(s) URL", rawURL)
	}
	if transport == "" {
		transport = "http"
	}
	if transport != "http" && transport != "sse" {
		return nil, fmt.Errorf("--transport: %q is not http or sse", transport)
	}
	cfg := &config.Config{
		MCPServers: map[string]*config.Server{adHocServer: {URL: rawURL, Type: config.Transport(transport), OAuth: compose.OAuthFromEnv(os.Getenv)}},
		Approvals:  adHocApprovals(adHocServer),
	}
	cfg.ApplyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The administrator's managed policy applies to ad-hoc servers too.
	if err := cfg.ApplyManaged(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// adHocFallback connects h's ad-hoc server over streamable HTTP and, when
// the server answered but not as a streamable HTTP endpoint (a legacy
// HTTP+SSE server answers a POST with 4xx), tries the legacy SSE
// transport, as the MCP spec's backwards-compatibility section says. It
// returns the host to use and says on stderr which transport worked.
func (a *app) adHocFallback(ctx context.Context, h *host.Host, rawURL string) (*host.Host, error) {
	h.Connect(ctx)
	snap := h.Server(adHocServer)
	if snap == nil || snap.Status != host.StatusError || unreachable(snap.Error) || strings.Contains(snap.Error, "oauth: ") {
		return h, nil
	}
	cfg, err := adHocConfig(rawURL, "sse")
	if err != nil {
		return nil, err
	}
	sse, err := a.newHost(cfg) // a.host is now the SSE host; the first is closed here
	if err != nil {
		return nil, err
	}
	_ = h.Close()
	sse.Connect(ctx)
	if s := sse.Server(adHocServer); s != nil && s.Status == host.StatusConnected {
		fmt.Fprintln(a.stderr, "agenthost: the server speaks the legacy HTTP+SSE transport; connected with --transport sse")
		return sse, nil
	}
	fmt.Fprintf(a.stderr, "agenthost: streamable HTTP failed (%s) and so did legacy SSE; pass --transport http or sse to choose\n", a.redact(snap.Error))
	return sse, nil
}

// unreachable reports a connection error that no other transport would
// get past.
func unreachable(msg string) bool {
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "deadline exceeded", "network is unreachable"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// adHocApprovals is the policy of a `call --url` call. There is no operator
// catalogue or rule set, and the strict bucket would make every tool without
// trusted metadata uncallable (minTrustLevel 5, two approvers), so the
// person who typed the call decides it: the risk stays unknown (the
// fail-closed values), but the call is one ask for one approver, answered by
// --approve (a prompt on a terminal, deny otherwise, auto for scripts).
func adHocApprovals(server string) rules.Config {
	single := "single"
	return rules.Config{
		Catalogue: []rules.CatalogueEntry{{
			Server:   server,
			Tool:     "*",
			Metadata: risk.RawMetadata{ApprovalRecommendation: &single, MinTrustLevel: 1},
		}},
		NoMatch: "ask",
	}
}
