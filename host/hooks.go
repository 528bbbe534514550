package host

import (
	"errors"
	"path/filepath"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals/hooks"
	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/host/internal/results"
	"github.com/agenthost/agenthost/internal/childproc"
)

// Hooks (package hooks) run at two points of a call: the PreToolUse hooks
// after the argument checks and before the approval workflow, whose
// decision they can only tighten (Call.Tighten); the PostToolUse hooks
// after the server's result was redacted and before it is audited and
// returned, where they may withhold or replace what the model sees. Hooks
// never see secure values: they run before the values are resolved, and
// after the result was redacted.

// newHookRunner compiles the configured hooks; nil when there are none.
// With a supervisor, every hook runs under it (hooks.Options.Supervisor).
func newHookRunner(cfg hooks.Config, file string, supervisor *childproc.Supervisor) (*hooks.Runner, error) {
	if cfg.Empty() {
		return nil, nil
	}
	dir := ""
	if file != "" {
		dir = filepath.Dir(file)
	}
	return hooks.New(cfg, hooks.Options{Dir: dir, Supervisor: supervisor})
}

// hookCall is what hooks are told of a call.
func (s *Session) hookCall(c *call) hooks.Call {
	return hooks.Call{SessionID: s.id, CallID: c.info.id, Server: c.server, Tool: c.ct.Tool.Name,
		Arguments: c.arguments, SecureParams: c.ct.Tool.SecureParams}
}

// hookRule is the audit rule id of a hook ("hook:<id>", with a suffix
// saying what happened when it is not a decision).
func hookRule(id, what string) string {
	if what == "" {
		return "hook:" + id
	}
	return "hook:" + id + ":" + what
}

// tighten is how the PreToolUse hooks' verdict tightens the call's
// decision. A failed hook denies, and the model is not told why.
func (s *Session) tighten(c *call, v hooks.PreVerdict) *callTighten {
	tighten := &callTighten{context: v.Context}
	switch {
	case v.Failure != nil:
		what := "failed"
		if errors.Is(v.Failure, hooks.ErrTimeout) {
			what = "timeout"
		}
		s.host.logger.Error("a PreToolUse hook failed; the call is denied", "server", c.server, "tool", c.ct.Tool.Name, "session", s.id, "err", v.Failure)
		tighten.action, tighten.by = rules.ActionDeny, hookRule(v.By, what)
	case v.Decision == hooks.DecisionDeny:
		tighten.action, tighten.by, tighten.message = rules.ActionDeny, hookRule(v.By, ""), v.Reason
	case v.Decision == hooks.DecisionAsk:
		tighten.action, tighten.by, tighten.message = rules.ActionAsk, hookRule(v.By, ""), v.Reason
	}
	return tighten
}

// callTighten is the PreToolUse hooks' word on a call.
type callTighten struct {
	action  rules.Action
	by      string
	message string
	context []string // additionalContext, added to the result the model sees
}

// postHooked is what the model is to see of a result (already redacted)
// after the PostToolUse hooks' verdict v (nil: none ran), with the audit
// rule saying what a hook did ("" when no hook changed anything).
func (s *Session) postHooked(c *call, r *mcp.CallToolResult, v *hooks.PostVerdict) (*mcp.CallToolResult, string) {
	h := s.host
	rule := ""
	var extra []string
	if c.tighten != nil {
		extra = c.tighten.context
	}
	if v != nil {
		extra = append(slices.Clip(extra), v.Context...)
		switch {
		case v.Failure != nil:
			h.logger.Error("a PostToolUse hook failed; the result is withheld from the model", "server", c.server, "tool", c.ct.Tool.Name, "session", s.id, "err", v.Failure)
			r, rule = results.WithheldByHook(""), hookRule(v.By, "failed")
		case v.Withheld:
			r, rule = results.WithheldByHook(v.Reason), hookRule(v.By, "withheld")
		case v.Replaced != nil:
			r, rule = results.Redact(h.redactor, results.Replaced(v.Replaced, r.IsError)), hookRule(v.By, "replaced")
		}
	}
	if len(extra) > 0 && r != nil {
		out := *r
		out.Content = slices.Clip(out.Content)
		for _, c := range extra {
			out.Content = append(out.Content, mcp.NewTextContent(h.redactor.Redact(c)))
		}
		r = &out
	}
	return r, rule
}
