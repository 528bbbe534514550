// Package shared is what the approvals verbs share: opening
// approvals.store, the exit codes of a vote, and how a request prints.
package shared

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/host/compose"
)

// OpenStore loads the config and opens approvals.store.
func OpenStore(ctx context.Context, f *cmdutil.Factory) (approvals.Store, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, err
	}
	s, err := compose.OpenApprovalStore(ctx, cfg, f.Databases(nil))
	if err != nil {
		return nil, cmdutil.HostErr(cfg.File, err)
	}
	return s, nil
}

// VoteErr maps a store error to the approvals commands' exit codes.
func VoteErr(err error) error {
	switch {
	case errors.Is(err, approvals.ErrUnknownApproval):
		return cmdutil.CodeErr(cmdutil.ExitNoSuchApproval, err)
	case errors.Is(err, approvals.ErrAlreadyResolved), errors.Is(err, approvals.ErrDuplicateVote),
		errors.Is(err, approvals.ErrSelfApproval), errors.Is(err, approvals.ErrSessionGrant):
		return cmdutil.CodeErr(cmdutil.ExitVoteRefused, err)
	case errors.Is(err, approvals.ErrNoApproverID):
		return cmdutil.UsageErr(fmt.Errorf("--as: %w", err))
	}
	return cmdutil.CodeErr(cmdutil.ExitError, err)
}

// AllowedCount is how many approvers allowed p.
func AllowedCount(p approvals.Approval) int {
	n := 0
	for _, v := range p.Votes {
		if v.Decision == approvals.VoteAllow {
			n++
		}
	}
	return n
}

// Expires is p's deadline in RFC 3339 (UTC), "-" for none.
func Expires(p approvals.Approval) string {
	if p.Request.Deadline.IsZero() {
		return "-"
	}
	return p.Request.Deadline.UTC().Format(time.RFC3339)
}

// PrintApproval prints one request with its arguments, risk and votes.
func PrintApproval(w io.Writer, p approvals.Approval) {
	r := &p.Request
	fmt.Fprintf(w, "id:         %s\nstate:      %s\ntool:       %s/%s\nsession:    %s\nsubject:    %s\n",
		p.ID, p.State, cmdutil.Shown(w, r.Server), cmdutil.Shown(w, r.Tool), cmdutil.Shown(w, r.SessionID), cmdutil.Shown(w, r.Requester))
	fmt.Fprintf(w, "arguments:  %s\n", cmdutil.Shown(w, string(r.Arguments)))
	if r.Unclassified {
		fmt.Fprintf(w, "risk:       %s\n", terminal.DescribeRisk(r.Risk, true))
	} else {
		fmt.Fprintf(w, "risk:       %s, %s, blast radius %s\n", r.Risk.Category, r.Risk.RiskLevel, r.Risk.BlastRadius)
	}
	if len(r.Rules) > 0 {
		fmt.Fprintf(w, "rules:      %s\n", cmdutil.Shown(w, strings.Join(r.Rules, ", ")))
	}
	if r.Message != "" {
		fmt.Fprintf(w, "message:    %s\n", cmdutil.Shown(w, r.Message))
	}
	fmt.Fprintf(w, "approvers:  %d needed, %d allowed\ncreated:    %s\nexpires:    %s\n", p.Needed, AllowedCount(p), p.Created.UTC().Format(time.RFC3339), Expires(p))
	for _, v := range p.Votes {
		note := ""
		if v.Note != "" {
			note = ": " + cmdutil.Shown(w, v.Note)
		}
		fmt.Fprintf(w, "vote:       %s %s at %s%s\n", cmdutil.Shown(w, v.ApproverID), v.Decision, v.TS.UTC().Format(time.RFC3339), note)
	}
}
