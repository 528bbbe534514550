package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
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
			// The call's own error says what failed: no log lines about
			// the server beside it.
			a.f.ReportsServers = true
			fail := func(kind host.Kind, code int, err error) error {
				msg := a.f.Redact(err.Error())
				if asJSON {
					_ = cmdutil.WriteJSON(a.f.IO.Out, newErrorReport(kind, msg))
					return &cmdutil.ExitErr{Code: code, Err: err, Printed: true}
				}
				return &cmdutil.ExitErr{Code: code, Err: errors.New(msg)}
			}
			t := cmdutil.Target{URL: serverURL, Transport: transport, TransportSet: cmd.Flags().Changed("transport")}
			var tool string
			switch {
			case serverURL != "":
				if len(args) != 1 {
					return fail(host.KindConfig, cmdutil.ExitUsage, errors.New("usage: call --url URL [--transport http|sse] TOOL"))
				}
				t.Server, tool = cmdutil.AdHocServer, args[0]
			default:
				if len(args) != 2 {
					return fail(host.KindConfig, cmdutil.ExitUsage, errors.New("usage: call SERVER TOOL [--args JSON]"))
				}
				t.Server, tool = args[0], args[1]
			}
			var arguments json.RawMessage
			t.Check = func() (err error) {
				arguments, err = cmdutil.ArgsObject(argsJSON)
				return err
			}
			_, sess, err := a.f.Connect(cmd.Context(), t, &a.sess)
			if err != nil {
				var ee *cmdutil.ExitErr
				if errors.As(err, &ee) && ee.Err != nil {
					err = ee.Err
				}
				return fail(host.KindConfig, cmdutil.ExitUsage, err)
			}
			res, err := sess.CallTool(cmd.Context(), t.Server, tool, arguments)
			if err != nil {
				kind := host.KindOf(err)
				return fail(kind, cmdutil.CodeFor(kind), err)
			}
			if asJSON {
				if err := cmdutil.WriteJSON(a.f.IO.Out, newCallReport(res)); err != nil {
					return err
				}
			} else {
				for _, l := range res.Labels {
					fmt.Fprintf(a.f.IO.ErrOut, "agenthost: the result is labelled %s (%s)\n", l.Label, l.Source)
				}
				printContent(a, res.Result)
			}
			if res.IsError() {
				return cmdutil.Exit(cmdutil.ExitToolError)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "", "tool arguments as a JSON object")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the result or error document described in docs/cli.md)")
	cmd.Flags().StringVar(&serverURL, "url", "", "call an ad-hoc server at this URL (no config)")
	cmd.Flags().StringVar(&transport, "transport", "", cmdutil.TransportUsage)
	a.addSessionFlags(cmd)
	return cmd
}

// printContent prints a tool result for a person: text as is (escaped on a
// terminal), anything else summarised with its type.
func printContent(a *app, r *mcp.CallToolResult) {
	for _, c := range r.Content {
		fmt.Fprintln(a.f.IO.Out, cmdutil.Shown(a.f.IO.Out, host.ContentText(c)))
	}
	if r.StructuredContent != nil && len(r.Content) == 0 {
		_ = cmdutil.WriteJSON(a.f.IO.Out, r.StructuredContent)
	}
}

// callReport is the result document of `call --json` (docs/cli.md); its
// fields are in the order the document has always had (alphabetical).
type callReport struct {
	Content           []mcp.Content           `json:"content"`
	Decision          *host.CallDecision      `json:"decision"`
	IsError           bool                    `json:"isError"`
	Labels            []approvals.ResultLabel `json:"labels,omitempty"`
	Server            string                  `json:"server"`
	StructuredContent any                     `json:"structuredContent"`
	Tool              string                  `json:"tool"`
}

func newCallReport(res *host.CallResult) callReport {
	content := res.Result.Content
	if content == nil {
		content = []mcp.Content{}
	}
	return callReport{Content: content, Decision: res.Decision, IsError: res.IsError(), Labels: res.Labels,
		Server: res.Server, StructuredContent: res.Result.StructuredContent, Tool: res.Tool}
}

// errorReport is the failure document of `call --json`.
type errorReport struct {
	Error errorBody `json:"error"`
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func newErrorReport(kind host.Kind, message string) errorReport {
	return errorReport{Error: errorBody{Kind: string(kind), Message: message}}
}
