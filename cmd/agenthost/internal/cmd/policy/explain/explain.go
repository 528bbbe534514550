// Package explain is `agenthost policy explain`: why a call would be
// allowed, asked or denied (host.Session.Explain), as text or JSON.
package explain

import (
	"context"
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// ExplainOptions are `policy explain`'s.
type ExplainOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx          context.Context
	Server, Tool string
	Args         string
	JSON         bool
	Session      cmdutil.SessionFlags
}

// NewCmdExplain is `agenthost policy explain`; runF replaces explainRun
// (tests).
func NewCmdExplain(f *cmdutil.Factory, runF func(*ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "explain SERVER TOOL",
		Short: "Why a call would be allowed, asked or denied (exit 0, 10 or 3)",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.Server, opts.Tool = cmd.Context(), args[0], args[1]
			return cmdutil.Run(opts, runF, explainRun)
		},
	}
	cmd.Flags().StringVar(&opts.Args, "args", "", "the call's arguments as a JSON object (they can raise risk)")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	cmdutil.AddSessionFlags(cmd, &opts.Session)
	return cmd
}

func explainRun(opts *ExplainOptions) error {
	f := opts.Factory
	arguments := json.RawMessage("{}")
	t := cmdutil.Target{Server: opts.Server, Check: func() error {
		args, err := cmdutil.ArgsObject(opts.Args)
		if err != nil {
			return cmdutil.UsageErr(err)
		}
		if args != nil {
			arguments = args
		}
		return nil
	}}
	_, sess, err := f.Connect(opts.Ctx, t, &opts.Session)
	if err != nil {
		return err
	}
	x, err := sess.Explain(opts.Ctx, opts.Server, opts.Tool, arguments)
	if err != nil {
		return cmdutil.CodeErr(cmdutil.CodeFor(host.KindOf(err)), err)
	}
	if opts.JSON {
		err = cmdutil.WriteJSON(f.IO.Out, x)
	} else {
		err = x.WriteText(f.IO.Out)
	}
	if err != nil {
		return err
	}
	return decisionExit(x.Decision.Action)
}

// decisionExit is the exit of a decision: 0 allowed, 10 asked, 3 denied.
func decisionExit(action rules.Action) error {
	switch action {
	case rules.ActionAllow:
		return nil
	case rules.ActionAsk:
		return cmdutil.Exit(cmdutil.ExitWouldAsk)
	default:
		return cmdutil.Exit(cmdutil.ExitDenied)
	}
}
