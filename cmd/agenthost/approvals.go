package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/stores"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
)

// openApprovalStore loads the config and opens approvals.store.
func (a *app) openApprovalStore(cmd *cobra.Command) (approvals.Store, error) {
	cfg, err := a.f.Config()
	if err != nil {
		return nil, err
	}
	s, err := host.OpenApprovalStore(cmd.Context(), cfg, stores.Databases{})
	if err != nil {
		return nil, cmdutil.HostErr(cfg.File, err)
	}
	return s, nil
}

// hostErr maps a host error to an exit code, naming the config file for
// configuration errors.
func (a *app) hostErr(file string, err error) error {
	kind := host.KindOf(err)
	if kind == host.KindConfig && file != "" {
		err = fmt.Errorf("%s: %w", file, err)
	}
	return &cmdutil.ExitErr{Code: cmdutil.CodeFor(kind), Err: err}
}

// waitApprover is `--approve wait`: each ask is raised in approvals.store
// and waits for votes from anywhere until the rule's timeout.
func (a *app) waitApprover(h *host.Host) (approvals.Approver, error) {
	store := h.ApprovalStore()
	if store == nil {
		return nil, cmdutil.UsageErr(errors.New("--approve wait: approvals.store is not set in the config; set it to sqlite:PATH or a postgres:// URL (docs/config.md)"))
	}
	return approvals.StoreApprover{Store: store, OnRaised: func(p approvals.Approval) {
		fmt.Fprintf(a.f.IO.ErrOut, "agenthost: approval %s raised for %s/%s (needs %d approver(s), expires %s); vote with: agenthost approvals approve %s --as NAME\n",
			p.ID, cmdutil.Shown(a.f.IO.ErrOut, p.Request.Server), cmdutil.Shown(a.f.IO.ErrOut, p.Request.Tool), p.Needed, p.Request.Deadline.UTC().Format(time.RFC3339), p.ID)
	}}, nil
}

func (a *app) approvalsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "approvals",
		Short: "List, show and vote on approval requests in approvals.store (any replica's)",
		Long: "List, show and vote on the approval requests kept in approvals.store, whichever replica raised them.\n" +
			"Described in docs/cli.md.",
	}
	cmd.AddCommand(a.approvalsListCommand(), a.approvalsShowCommand(), a.approvalsVoteCommand(true), a.approvalsVoteCommand(false))
	return cmd
}

func (a *app) approvalsListCommand() *cobra.Command {
	var asJSON, all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List open approval requests, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := a.openApprovalStore(cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			list, err := s.List(cmd.Context(), approvals.ListOptions{Settled: all})
			if err != nil {
				return &cmdutil.ExitErr{Code: cmdutil.ExitError, Err: err}
			}
			if list == nil {
				list = []approvals.Approval{}
			}
			if asJSON {
				return cmdutil.WriteJSON(a.f.IO.Out, list)
			}
			return a.printApprovals(list)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of approval objects (docs/cli.md)")
	cmd.Flags().BoolVar(&all, "all", false, "include settled requests (most recent first, after the open ones)")
	return cmd
}

func (a *app) printApprovals(list []approvals.Approval) error {
	if len(list) == 0 {
		fmt.Fprintln(a.f.IO.Out, "no approval requests")
		return nil
	}
	w := tabwriter.NewWriter(a.f.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tSTATE\tTOOL\tSESSION\tSUBJECT\tALLOWED\tEXPIRES")
	for _, p := range list {
		fmt.Fprintf(w, "%s\t%s\t%s/%s\t%s\t%s\t%d/%d\t%s\n", p.ID, p.State, cmdutil.Shown(a.f.IO.Out, p.Request.Server), cmdutil.Shown(a.f.IO.Out, p.Request.Tool),
			cmdutil.Shown(a.f.IO.Out, p.Request.SessionID), cmdutil.Shown(a.f.IO.Out, p.Request.Requester), allowedCount(p), p.Needed, expires(p))
	}
	return w.Flush()
}

func allowedCount(p approvals.Approval) int {
	n := 0
	for _, v := range p.Votes {
		if v.Decision == approvals.VoteAllow {
			n++
		}
	}
	return n
}

func expires(p approvals.Approval) string {
	if p.Request.Deadline.IsZero() {
		return "-"
	}
	return p.Request.Deadline.UTC().Format(time.RFC3339)
}

func (a *app) approvalsShowCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request with its arguments, risk and votes",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openApprovalStore(cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := s.Get(cmd.Context(), args[0])
			if err != nil {
				return voteErr(err)
			}
			if asJSON {
				return cmdutil.WriteJSON(a.f.IO.Out, p)
			}
			a.printApproval(a.f.IO.Out, p)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the approval object (docs/cli.md)")
	return cmd
}

func (a *app) printApproval(w io.Writer, p approvals.Approval) {
	r := &p.Request
	fmt.Fprintf(w, "id:         %s\nstate:      %s\ntool:       %s/%s\nsession:    %s\nsubject:    %s\n",
		p.ID, p.State, cmdutil.Shown(w, r.Server), cmdutil.Shown(w, r.Tool), cmdutil.Shown(w, r.SessionID), cmdutil.Shown(w, r.Requester))
	fmt.Fprintf(w, "arguments:  %s\n", cmdutil.Shown(w, string(r.Arguments)))
	if r.Unclassified {
		fmt.Fprintf(w, "risk:       %s\n", approvals.DescribeRisk(r.Risk, true))
	} else {
		fmt.Fprintf(w, "risk:       %s, %s, blast radius %s\n", r.Risk.Category, r.Risk.RiskLevel, r.Risk.BlastRadius)
	}
	if len(r.Rules) > 0 {
		fmt.Fprintf(w, "rules:      %s\n", cmdutil.Shown(w, strings.Join(r.Rules, ", ")))
	}
	if r.Message != "" {
		fmt.Fprintf(w, "message:    %s\n", cmdutil.Shown(w, r.Message))
	}
	fmt.Fprintf(w, "approvers:  %d needed, %d allowed\ncreated:    %s\nexpires:    %s\n", p.Needed, allowedCount(p), p.Created.UTC().Format(time.RFC3339), expires(p))
	for _, v := range p.Votes {
		note := ""
		if v.Note != "" {
			note = ": " + cmdutil.Shown(w, v.Note)
		}
		fmt.Fprintf(w, "vote:       %s %s at %s%s\n", cmdutil.Shown(w, v.ApproverID), v.Decision, v.TS.UTC().Format(time.RFC3339), note)
	}
}

// voteErr maps a store error to the approvals commands' exit codes.
func voteErr(err error) error {
	switch {
	case errors.Is(err, approvals.ErrUnknownApproval):
		return &cmdutil.ExitErr{Code: cmdutil.ExitNoSuchApproval, Err: err}
	case errors.Is(err, approvals.ErrAlreadyResolved), errors.Is(err, approvals.ErrDuplicateVote),
		errors.Is(err, approvals.ErrSelfApproval), errors.Is(err, approvals.ErrSessionGrant):
		return &cmdutil.ExitErr{Code: cmdutil.ExitVoteRefused, Err: err}
	case errors.Is(err, approvals.ErrNoApproverID):
		return cmdutil.UsageErr(fmt.Errorf("--as: %w", err))
	}
	return &cmdutil.ExitErr{Code: cmdutil.ExitError, Err: err}
}

func (a *app) approvalsVoteCommand(allow bool) *cobra.Command {
	var as, reason string
	var forSession, asJSON bool
	use, short := "reject ID --as NAME [--reason TEXT]", "Reject an approval request as NAME (a veto: it is rejected at once)"
	if allow {
		use, short = "approve ID --as NAME [--reason TEXT]", "Allow an approval request as NAME (it is approved once enough distinct people allowed)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(as) == "" {
				return cmdutil.UsageErr(errors.New("--as NAME is required: the approver the vote is cast as"))
			}
			s, err := a.openApprovalStore(cmd)
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := s.Vote(cmd.Context(), args[0], approvals.Resolution{ApproverID: as, Allow: allow, Note: reason, ForSession: allow && forSession})
			if err != nil {
				return voteErr(err)
			}
			if asJSON {
				return cmdutil.WriteJSON(a.f.IO.Out, p)
			}
			switch p.State {
			case approvals.StatePending:
				fmt.Fprintf(a.f.IO.Out, "%s: vote counted; %d of %d approvers allowed, still pending\n", p.ID, allowedCount(p), p.Needed)
			default:
				fmt.Fprintf(a.f.IO.Out, "%s: vote counted; %s\n", p.ID, p.State)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "the approver's name (required); the requester cannot approve its own call")
	cmd.Flags().StringVar(&reason, "reason", "", "a note kept with the vote; a rejection's note is quoted to the model")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the approval object after the vote (docs/cli.md)")
	if allow {
		cmd.Flags().BoolVar(&forSession, "for-session", false, "also allow the tool for the rest of the session (single-approver requests only)")
	}
	return cmd
}

func (a *app) auditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Check the audit records kept in audit.store",
		Long:  "Check the audit records kept in audit.store. Described in docs/audit.md and docs/cli.md.",
	}
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Check the hash chain(s) of audit.store and name the first broken record",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.f.Config()
			if err != nil {
				return err
			}
			chainKey, err := host.AuditChainKey(cfg, nil)
			if err != nil {
				return cmdutil.HostErr(cfg.File, err)
			}
			reports, err := host.VerifyAudit(cmd.Context(), cfg, stores.Databases{ChainKey: chainKey})
			if err != nil {
				return cmdutil.HostErr(cfg.File, err)
			}
			if reports == nil {
				reports = []approvals.ChainReport{}
			}
			if asJSON {
				if err := cmdutil.WriteJSON(a.f.IO.Out, reports); err != nil {
					return err
				}
			}
			broken := false
			for _, r := range reports {
				broken = broken || r.Broken != nil
				if asJSON {
					continue
				}
				switch {
				case r.Broken != nil:
					fmt.Fprintf(a.f.IO.Out, "chain %s: BROKEN at record %d: %s (%d records before it check out)\n", r.Chain, r.Broken.Seq, r.Broken.Reason, r.Records)
				case r.Keyed == 0:
					fmt.Fprintf(a.f.IO.Out, "chain %s: %d records, intact\n", r.Chain, r.Records)
				case r.Keyed == r.Records:
					fmt.Fprintf(a.f.IO.Out, "chain %s: %d records, intact, keyed\n", r.Chain, r.Records)
				default:
					fmt.Fprintf(a.f.IO.Out, "chain %s: %d records, intact; the last %d keyed, the first %d unkeyed (SHA-256 only)\n", r.Chain, r.Records, r.Keyed, r.Records-r.Keyed)
				}
			}
			if !asJSON && len(reports) == 0 {
				fmt.Fprintln(a.f.IO.Out, "no audit records")
			}
			if broken {
				return &cmdutil.ExitErr{Code: cmdutil.ExitChainBroken, Err: errors.New("the audit chain is broken"), Printed: asJSON}
			}
			return nil
		},
	}
	verify.Flags().BoolVar(&asJSON, "json", false, "print a JSON array of {chain, records, broken: {chain, seq, reason} | null}")
	cmd.AddCommand(verify)
	return cmd
}
