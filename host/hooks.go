package host

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/hooks"
)

// Hooks (package hooks) run at two points of a call: the PreToolUse hooks
// after the argument checks and before the approval workflow, whose
// decision they can only tighten (Call.Tighten); the PostToolUse hooks
// after the server's result was redacted and before it is audited and
// returned, where they may withhold or replace what the model sees. Hooks
// never see secure values: they run before the values are resolved, and
// after the result was redacted.

// newHookRunner compiles the configured hooks; nil when there are none.
func newHookRunner(cfg hooks.Config, file string) (*hooks.Runner, error) {
	if cfg.Empty() {
		return nil, nil
	}
	dir := ""
	if file != "" {
		dir = filepath.Dir(file)
	}
	return hooks.New(cfg, hooks.Options{Dir: dir})
}

// hookCall is what hooks are told of a call.
func (s *Session) hookCall(server string, ct *CatalogTool, args []byte, info callInfo) hooks.Call {
	return hooks.Call{SessionID: s.id, CallID: info.id, Server: server, Tool: ct.Tool.Name,
		Arguments: args, SecureParams: ct.Tool.SecureParams}
}

// hookRule is the audit rule id of a hook ("hook:<id>", with a suffix
// saying what happened when it is not a decision).
func hookRule(id, what string) string {
	if what == "" {
		return "hook:" + id
	}
	return "hook:" + id + ":" + what
}

// preHooks runs the PreToolUse hooks and says how they tighten the call's
// decision. A failed hook denies, and the model is not told why.
func (s *Session) preHooks(ctx context.Context, server string, ct *CatalogTool, args []byte, info callInfo) (tighten callTighten) {
	h := s.host
	if !h.hooks.HasPre() {
		return tighten
	}
	v := h.hooks.Pre(ctx, s.hookCall(server, ct, args, info))
	tighten.context = v.Context
	switch {
	case v.Failure != nil:
		what := "failed"
		if errors.Is(v.Failure, hooks.ErrTimeout) {
			what = "timeout"
		}
		h.logger.Error("a PreToolUse hook failed; the call is denied", "server", server, "tool", ct.Tool.Name, "session", s.id, "err", v.Failure)
		tighten.action, tighten.by = approvals.ActionDeny, hookRule(v.By, what)
	case v.Decision == hooks.DecisionDeny:
		tighten.action, tighten.by, tighten.message = approvals.ActionDeny, hookRule(v.By, ""), v.Reason
	case v.Decision == hooks.DecisionAsk:
		tighten.action, tighten.by, tighten.message = approvals.ActionAsk, hookRule(v.By, ""), v.Reason
	}
	return tighten
}

// callTighten is the PreToolUse hooks' word on a call.
type callTighten struct {
	action  approvals.Action
	by      string
	message string
	context []string // additionalContext, added to the result the model sees
}

// postHooks runs the PostToolUse hooks on a result (already redacted) and
// returns what the model is to see, with the audit rule saying what a hook
// did ("" when no hook changed anything).
func (s *Session) postHooks(ctx context.Context, server string, ct *CatalogTool, args []byte, info callInfo, r *mcp.CallToolResult, extra []string) (*mcp.CallToolResult, string) {
	h := s.host
	rule := ""
	if h.hooks.HasPost() && r != nil {
		raw, err := json.Marshal(r)
		if err != nil {
			raw = []byte(`null`)
		}
		v := h.hooks.Post(ctx, s.hookCall(server, ct, args, info), raw)
		extra = append(slices.Clip(extra), v.Context...)
		switch {
		case v.Failure != nil:
			h.logger.Error("a PostToolUse hook failed; the result is withheld from the model", "server", server, "tool", ct.Tool.Name, "session", s.id, "err", v.Failure)
			r, rule = withheldByHook(""), hookRule(v.By, "failed")
		case v.Withheld:
			r, rule = withheldByHook(v.Reason), hookRule(v.By, "withheld")
		case v.Replaced != nil:
			r, rule = h.redactResult(replacedResult(v.Replaced, r.IsError)), hookRule(v.By, "replaced")
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

// withheldByHook is the result the model gets when a PostToolUse hook
// blocked it.
func withheldByHook(reason string) *mcp.CallToolResult {
	text := "The tool ran, but a hook withheld its result."
	if reason != "" {
		text += " Hook note: " + reason
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{mcp.NewTextContent(text)}}
}

// replacedResult reads a hook's replacement result: a string is one text
// block; an object with "content" is a whole tool result; a list is the
// content blocks; anything else is given as its JSON text.
func replacedResult(raw json.RawMessage, isError bool) *mcp.CallToolResult {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{mcp.NewTextContent(text)}}
	}
	var probe struct {
		Content json.RawMessage `json:"content"`
	}
	switch {
	case raw[0] == '{' && json.Unmarshal(raw, &probe) == nil && probe.Content != nil:
		if r, err := mcp.ParseCallToolResult(&raw); err == nil {
			return r
		}
	case raw[0] == '[':
		wrapped := json.RawMessage(`{"content":` + string(raw) + `,"isError":` + boolText(isError) + `}`)
		if r, err := mcp.ParseCallToolResult(&wrapped); err == nil {
			return r
		}
	}
	return &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{mcp.NewTextContent(string(raw))}}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
