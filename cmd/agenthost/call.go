package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
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
				u, err := url.Parse(serverURL)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return fail(host.KindConfig, exitUsage, fmt.Errorf("--url: %q is not an http(s) URL", serverURL))
				}
				if transport != "http" && transport != "sse" {
					return fail(host.KindConfig, exitUsage, fmt.Errorf("--transport: %q is not http or sse", transport))
				}
				server, tool = "url", args[0]
				cfg = &config.Config{
					MCPServers: map[string]*config.Server{
						server: {URL: serverURL, Type: config.Transport(transport)},
					},
					Approvals: adHocApprovals(server),
				}
				cfg.ApplyDefaults()
				if err := cfg.Validate(); err != nil {
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
				if err := writeJSON(a.stdout, map[string]any{
					"server":            res.Server,
					"tool":              res.Tool,
					"isError":           res.IsError(),
					"content":           content,
					"structuredContent": res.Result.StructuredContent,
					"decision":          res.Decision,
				}); err != nil {
					return err
				}
			} else {
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
	cmd.Flags().StringVar(&transport, "transport", "http", "transport for --url: http or sse")
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

// adHocApprovals is the policy of a `call --url` call. There is no operator
// catalogue or rule set, and the strict bucket would make every tool without
// trusted metadata uncallable (minTrustLevel 5, two approvers), so the
// person who typed the call decides it: the risk stays unknown (the
// fail-closed values), but the call is one ask for one approver, answered by
// --approve (a prompt on a terminal, deny otherwise, auto for scripts).
func adHocApprovals(server string) approvals.Config {
	single := "single"
	return approvals.Config{
		Catalogue: []approvals.CatalogueEntry{{
			Server:   server,
			Tool:     "*",
			Metadata: approvals.RawMetadata{ApprovalRecommendation: &single, MinTrustLevel: 1},
		}},
		NoMatch: "ask",
	}
}
