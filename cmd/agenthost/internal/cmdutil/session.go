package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/answermode"
	"github.com/agenthost/agenthost/approvals/ids"
	"github.com/agenthost/agenthost/approvals/risk"
	"github.com/agenthost/agenthost/bindings"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/host"
)

// SessionFlags are the session flags of call, tools, run and policy
// explain (docs/cli.md, "Session flags").
type SessionFlags struct {
	Binds   []string
	Trust   int
	Approve string
	ID      string
	Subject string
}

// AddSessionFlags adds the session flags to cmd, read into s.
func AddSessionFlags(cmd *cobra.Command, s *SessionFlags) {
	f := cmd.Flags()
	f.StringArrayVar(&s.Binds, "bind", nil, "session value NAME=VALUE, used by bindings of kind session (repeatable)")
	f.IntVar(&s.Trust, "trust", 0, "session trust level 1..5 (default from config, else 1)")
	f.StringVar(&s.Approve, "approve", "", "how asks are answered: prompt, deny, auto or wait (votes from anywhere through approvals.store); default prompt on a terminal, else deny")
	f.StringVar(&s.ID, "session-id", "", "session id passed to credential sources and audit")
	f.StringVar(&s.Subject, "subject", "", "the user or tenant the session acts for")
}

// Session opens on h the session s describes.
func (f *Factory) Session(h *host.Host, s *SessionFlags) (*host.Session, error) {
	values, err := bindings.ParseBinds(s.Binds)
	if err != nil {
		return nil, UsageErr(fmt.Errorf("--bind: %w", err))
	}
	if s.Trust != 0 && !risk.ValidTrustLevel(s.Trust) {
		return nil, UsageErr(fmt.Errorf("--trust: %d is not in %d..%d", s.Trust, risk.MinTrust, risk.MaxTrust))
	}
	mode, err := answermode.Parse(s.Approve)
	if err != nil {
		return nil, UsageErr(fmt.Errorf("--approve: %w", err))
	}
	approver := f.approver(s)
	if mode == answermode.Wait {
		if approver, err = f.waitApprover(h); err != nil {
			return nil, err
		}
	}
	return h.NewSession(host.SessionOptions{
		ID:         s.ID,
		Subject:    s.Subject,
		TrustLevel: s.Trust,
		Values:     values,
		Approver:   approver,
	}), nil
}

// approver answers asks per --approve: prompt on a terminal, deny otherwise.
func (f *Factory) approver(s *SessionFlags) approvals.Approver {
	switch answermode.Mode(s.Approve).Resolve(f.IO.StdinIsTerminal()) {
	case answermode.Auto:
		return approvals.Auto{}
	case answermode.Prompt:
		id := os.Getenv("USER")
		if id == "" {
			id = "terminal"
		}
		if ids.SameID(id, s.Subject) {
			// The session's gate denies asks at once (a yes from the
			// requester cannot count); say so before anything is asked.
			fmt.Fprintf(f.IO.ErrOut, "agenthost: warning: the prompt answers as %q, who is also the session's --subject: calls that need approval are denied without asking; "+
				"run with a --subject other than the approver, or have someone other than the subject approve\n", id)
		}
		if f.Asker != nil {
			return terminal.NewAskerPrompt(f.Asker, id, f.PromptOptions)
		}
		return terminal.NewInputPrompt(f.TerminalInput(), f.IO.ErrOut, id)
	default:
		return approvals.Deny{}
	}
}

// waitApprover is `--approve wait`: each ask is raised in approvals.store
// and waits for votes from anywhere until the rule's timeout.
func (f *Factory) waitApprover(h *host.Host) (approvals.Approver, error) {
	store := h.ApprovalStore()
	if store == nil {
		return nil, UsageErr(errors.New("--approve wait: approvals.store is not set in the config; set it to sqlite:PATH or a postgres:// URL (docs/config.md)"))
	}
	stderr := f.IO.ErrOut
	return approvals.StoreApprover{Store: store, OnRaised: func(p approvals.Approval) {
		fmt.Fprintf(stderr, "agenthost: approval %s raised for %s/%s (needs %d approver(s), expires %s); vote with: agenthost approvals approve %s --as NAME\n",
			p.ID, Shown(stderr, p.Request.Server), Shown(stderr, p.Request.Tool), p.Needed, p.Request.Deadline.UTC().Format(time.RFC3339), p.ID)
	}}, nil
}

// elicitation answers servers' requests for user input (multi-round-trip
// input rounds, elicitation/create) as --approve answers asks: a mode that
// accepts them (answermode.Mode.AcceptsQuestions) fills in the
// requested schema's defaults, so that scripted calls of tools that ask for
// confirmation can complete; otherwise nil declines them. The REPL's
// terminal questions (Factory.Elicitation) come first.
func (f *Factory) elicitation(approve string) host.ElicitationFunc {
	if f.Elicitation != nil {
		return f.Elicitation
	}
	if !answermode.Mode(approve).AcceptsQuestions() {
		return nil
	}
	return func(_ context.Context, _ string, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
		return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action:  mcp.ElicitationResponseActionAccept,
			Content: answermode.ElicitationDefaults(req.Params.RequestedSchema),
		}}, nil
	}
}
