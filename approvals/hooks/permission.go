package hooks

import (
	"context"
	"encoding/json"
	"fmt"
)

// Vote is one PermissionRequest hook's answer, as its approver identity.
type Vote struct {
	Approver string
	// Decision is DecisionAllow, DecisionDeny or DecisionNone (no vote).
	Decision Decision
	// Reason is the hook's message (a deny's note).
	Reason string
	// Failure is set when the hook failed; its vote is then a deny.
	Failure error
	// By is the hook's id.
	By string
}

// HasPermission reports whether any PermissionRequest hook is configured.
func (r *Runner) HasPermission() bool { return r != nil && len(r.permission) > 0 }

// Permission runs the PermissionRequest hooks whose matcher selects the
// call, one after another, and returns their votes. It stops at the first
// deny (a failed hook votes deny).
func (r *Runner) Permission(ctx context.Context, c Call) []Vote {
	if !r.HasPermission() {
		return nil
	}
	name := ToolName(c.Server, c.Tool)
	var votes []Vote
	var stdin []byte
	for _, g := range r.permission {
		if !g.match.matches(name) {
			continue
		}
		for _, h := range g.hooks {
			v := Vote{Approver: h.Approver, By: h.id}
			if stdin == nil {
				var err error
				if stdin, err = r.input(EventPermissionRequest, c, nil); err != nil {
					v.Decision, v.Failure = DecisionDeny, err
					return append(votes, v)
				}
			}
			d, reason, err := permissionAnswer(h.run(ctx, r.cwd, stdin))
			if err != nil {
				v.Decision, v.Failure = DecisionDeny, fmt.Errorf("hook %s: %w", h.id, err)
				return append(votes, v)
			}
			v.Decision, v.Reason = d, reason
			votes = append(votes, v)
			if d == DecisionDeny {
				return votes
			}
		}
	}
	return votes
}

// permissionOutput is Claude Code's PermissionRequest answer:
// hookSpecificOutput.decision.{behavior, message}.
type permissionOutput struct {
	HookSpecificOutput *struct {
		Decision *struct {
			Behavior     string `json:"behavior"`
			Message      string `json:"message"`
			UpdatedInput any    `json:"updatedInput"`
		} `json:"decision"`
	} `json:"hookSpecificOutput"`
	Continue   *bool  `json:"continue"`
	StopReason string `json:"stopReason"`
}

// permissionAnswer turns one PermissionRequest run into a vote.
func permissionAnswer(res result, runErr error) (Decision, string, error) {
	if runErr != nil {
		return DecisionDeny, "", runErr
	}
	if res.status == exitBlock {
		return DecisionDeny, oneLine(string(res.stderr), maxReasonRunes), nil
	}
	if _, err := parseOutput(res.stdout); err != nil {
		return DecisionDeny, "", err
	}
	t := answerBytes(res.stdout)
	if t == nil || t[0] != '{' {
		return DecisionNone, "", nil
	}
	var o permissionOutput
	if err := json.Unmarshal(t, &o); err != nil {
		return DecisionDeny, "", fmt.Errorf("%w: %v", ErrBadOutput, err)
	}
	if o.Continue != nil && !*o.Continue {
		return DecisionDeny, oneLine(o.StopReason, maxReasonRunes), nil
	}
	if o.HookSpecificOutput == nil || o.HookSpecificOutput.Decision == nil {
		return DecisionNone, "", nil
	}
	d := o.HookSpecificOutput.Decision
	if d.UpdatedInput != nil {
		return DecisionDeny, "", fmt.Errorf("%w: it returned updatedInput, and agenthost does not let hooks change a call's arguments (docs/config.md)", ErrBadOutput)
	}
	switch d.Behavior {
	case "allow":
		return DecisionAllow, oneLine(d.Message, maxReasonRunes), nil
	case "deny":
		return DecisionDeny, oneLine(d.Message, maxReasonRunes), nil
	case "":
		return DecisionNone, "", nil
	}
	return DecisionDeny, "", fmt.Errorf("%w: unknown decision.behavior %q", ErrBadOutput, oneLine(d.Behavior, 40))
}
