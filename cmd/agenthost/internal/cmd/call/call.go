// Package call is `agenthost call`: one tool call through the session's
// checks, its result as text or the JSON document of docs/cli.md.
package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// CallOptions are `call`'s.
type CallOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx context.Context
	// Server and Tool are the arguments (Server is the ad-hoc server's
	// name with --url).
	Server, Tool string
	Args         string
	JSON         bool
	cmdutil.AdHocFlags
	Session cmdutil.SessionFlags
	// usage is the arguments' error, reported as the call's (in JSON with
	// --json).
	usage error
}

// NewCmdCall is `agenthost call`; runF replaces callRun (tests).
func NewCmdCall(f *cmdutil.Factory, runF func(*CallOptions) error) *cobra.Command {
	opts := &CallOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "call SERVER TOOL | call --url URL TOOL",
		Short: "Call one tool, through the same checks as an agent session",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx = cmd.Context()
			opts.Parsed(cmd)
			switch {
			case opts.URL != "" && len(args) != 1:
				opts.usage = errors.New("usage: call --url URL [--transport http|sse] TOOL")
			case opts.URL != "":
				opts.Server, opts.Tool = cmdutil.AdHocServer, args[0]
			case len(args) != 2:
				opts.usage = errors.New("usage: call SERVER TOOL [--args JSON]")
			default:
				opts.Server, opts.Tool = args[0], args[1]
			}
			return cmdutil.Run(opts, runF, callRun)
		},
	}
	cmd.Flags().StringVar(&opts.Args, "args", "", "tool arguments as a JSON object")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON (the result or error document described in docs/cli.md)")
	cmdutil.AddAdHocFlags(cmd, &opts.AdHocFlags, "call an ad-hoc server at this URL (no config)")
	cmdutil.AddSessionFlags(cmd, &opts.Session)
	return cmd
}

func callRun(opts *CallOptions) error {
	f := opts.Factory
	// The call's own error says what failed: no log lines about the
	// server beside it.
	f.ReportsServers = true
	if opts.usage != nil {
		return fail(opts, host.KindConfig, cmdutil.ExitUsage, opts.usage)
	}
	var arguments json.RawMessage
	t := opts.Target(opts.Server, "")
	t.Check = func() (err error) {
		arguments, err = cmdutil.ArgsObject(opts.Args)
		return err
	}
	_, sess, err := f.Connect(opts.Ctx, t, &opts.Session)
	if err != nil {
		var ee *cmdutil.ExitErr
		if errors.As(err, &ee) && ee.Err != nil {
			err = ee.Err
		}
		return fail(opts, host.KindConfig, cmdutil.ExitUsage, err)
	}
	res, err := sess.CallTool(opts.Ctx, opts.Server, opts.Tool, arguments)
	if err != nil {
		kind := host.KindOf(err)
		return fail(opts, kind, cmdutil.CodeFor(kind), err)
	}
	if opts.JSON {
		if err := cmdutil.WriteJSON(f.IO.Out, NewReport(res)); err != nil {
			return err
		}
	} else {
		for _, l := range res.Labels {
			fmt.Fprintf(f.IO.ErrOut, "agenthost: the result is labelled %s (%s)\n", l.Label, l.Source)
		}
		PrintContent(f.IO.Out, res.Result)
	}
	if res.IsError() {
		return cmdutil.Exit(cmdutil.ExitToolError)
	}
	return nil
}

// fail is the call's failure: the error document on stdout with --json
// (the error then printed), else the message for stderr; every secure
// value resolved so far is masked in it.
func fail(opts *CallOptions, kind host.Kind, code int, err error) error {
	msg := opts.Factory.Redact(err.Error())
	if opts.JSON {
		_ = cmdutil.WriteJSON(opts.Factory.IO.Out, NewErrorReport(kind, msg))
		return &cmdutil.ExitErr{Code: code, Err: err, Printed: true}
	}
	return &cmdutil.ExitErr{Code: code, Err: errors.New(msg)}
}

// PrintContent prints a tool result for a person: text as is (escaped on
// a terminal), anything else summarised with its type.
func PrintContent(w io.Writer, r *mcp.CallToolResult) {
	for _, c := range r.Content {
		fmt.Fprintln(w, cmdutil.Shown(w, host.ContentText(c)))
	}
	if r.StructuredContent != nil && len(r.Content) == 0 {
		_ = cmdutil.WriteJSON(w, r.StructuredContent)
	}
}

// Report is the result document of `call --json` (docs/cli.md); its
// fields are in the order the document has always had (alphabetical).
type Report struct {
	Content           []mcp.Content      `json:"content"`
	Decision          *host.CallDecision `json:"decision"`
	IsError           bool               `json:"isError"`
	Labels            []risk.ResultLabel `json:"labels,omitempty"`
	Server            string             `json:"server"`
	StructuredContent any                `json:"structuredContent"`
	Tool              string             `json:"tool"`
}

// NewReport is the report of a call's result; content is [] when the
// server sent none.
func NewReport(res *host.CallResult) Report {
	content := res.Result.Content
	if content == nil {
		content = []mcp.Content{}
	}
	return Report{Content: content, Decision: res.Decision, IsError: res.IsError(), Labels: res.Labels,
		Server: res.Server, StructuredContent: res.Result.StructuredContent, Tool: res.Tool}
}

// ErrorReport is the failure document of `call --json`.
type ErrorReport struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is what failed: the host's error kind and the message.
type ErrorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// NewErrorReport is the failure document of kind with message.
func NewErrorReport(kind host.Kind, message string) ErrorReport {
	return ErrorReport{Error: ErrorBody{Kind: string(kind), Message: message}}
}
