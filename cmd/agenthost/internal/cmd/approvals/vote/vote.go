// Package vote is `agenthost approvals approve` and `approvals reject`: a
// vote on a request of approvals.store.
package vote

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmd/approvals/shared"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
)

// VoteOptions are `approvals approve`'s and `approvals reject`'s.
type VoteOptions struct {
	Factory *cmdutil.Factory
	// Ctx is the command's context.
	Ctx        context.Context
	ID         string
	Allow      bool
	As, Reason string
	ForSession bool
	JSON       bool
}

// NewCmdVote is `approvals approve` (allow) or `approvals reject`; runF
// replaces voteRun (tests).
func NewCmdVote(f *cmdutil.Factory, allow bool, runF func(*VoteOptions) error) *cobra.Command {
	opts := &VoteOptions{Factory: f, Allow: allow}
	use, short := "reject ID --as NAME [--reason TEXT]", "Reject an approval request as NAME (a veto: it is rejected at once)"
	if allow {
		use, short = "approve ID --as NAME [--reason TEXT]", "Allow an approval request as NAME (it is approved once enough distinct people allowed)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Ctx, opts.ID = cmd.Context(), args[0]
			if strings.TrimSpace(opts.As) == "" {
				return cmdutil.UsageErr(errors.New("--as NAME is required: the approver the vote is cast as"))
			}
			return cmdutil.Run(opts, runF, voteRun)
		},
	}
	cmd.Flags().StringVar(&opts.As, "as", "", "the approver's name (required); the requester cannot approve its own call")
	cmd.Flags().StringVar(&opts.Reason, "reason", "", "a note kept with the vote; a rejection's note is quoted to the model")
	cmd.Flags().BoolVar(&opts.JSON, "json", false, "print the approval object after the vote (docs/cli.md)")
	if allow {
		cmd.Flags().BoolVar(&opts.ForSession, "for-session", false, "also allow the tool for the rest of the session (single-approver requests only)")
	}
	return cmd
}

func voteRun(opts *VoteOptions) error {
	f := opts.Factory
	s, err := shared.OpenStore(opts.Ctx, f)
	if err != nil {
		return err
	}
	defer s.Close()
	p, err := s.Vote(opts.Ctx, opts.ID, approvals.Resolution{ApproverID: opts.As, Allow: opts.Allow, Note: opts.Reason, ForSession: opts.Allow && opts.ForSession})
	if err != nil {
		return shared.VoteErr(err)
	}
	if opts.JSON {
		return cmdutil.WriteJSON(f.IO.Out, p)
	}
	switch p.State {
	case approvals.StatePending:
		fmt.Fprintf(f.IO.Out, "%s: vote counted; %d of %d approvers allowed, still pending\n", p.ID, shared.AllowedCount(p), p.Needed)
	default:
		fmt.Fprintf(f.IO.Out, "%s: vote counted; %s\n", p.ID, p.State)
	}
	return nil
}
