// Package list is `agenthost approvals list`: the requests of
// approvals.store, open ones first.
package list

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// ListOptions are `approvals list`'s.
type ListOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx  context.Context
	JSON bool
	All  bool
}

// NewCmdList is `agenthost approvals list`; runF replaces listRun (tests).
func NewCmdList(f *cmdutil.Factory, runF func(*ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List open approval requests, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Ctx = cmd.Context()
			return cmdutil.Run(opts, runF, listRun)
		},
	}
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array of approval objects (docs/cli.md)")
	cmd.Flags().BoolVar(&opts.All, "all", false, "include settled requests (most recent first, after the open ones)")
	return cmd
}

func listRun(opts *ListOptions) error {
	f := opts.Factory
	s, err := shared.OpenStore(opts.Ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	list, err := s.List(opts.Ctx, approvals.ListOptions{Settled: opts.All})
	if err != nil {
		return cmdutil.CodeErr(cmdutil.ExitError, err)
	}
	if list == nil {
		list = []approvals.Approval{}
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, list)
	}
	return printTable(f.IO, list)
}

func printTable(io *cmdutil.IOStreams, list []approvals.Approval) error {
	if len(list) == 0 {
		fmt.Fprintln(io.Out, "no approval requests")
		return nil
	}
	out := io.Out
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tTOOL\tSESSION\tSUBJECT\tALLOWED\tEXPIRES")
	for _, p := range list {
		fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%d/%d\t%s\n", p.ID, p.State, cmdutil.Shown(out, p.Request.Server), cmdutil.Shown(out, p.Request.Tool),
			cmdutil.Shown(out, p.Request.SessionID), cmdutil.Shown(out, p.Request.Requester), shared.AllowedCount(p), p.Needed, shared.Expires(p))
	}
	return w.Flush()
}
