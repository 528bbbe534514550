package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Decision is a PreToolUse verdict. The zero value is "no opinion".
type Decision string

// Decisions, weakest first.
const (
	DecisionNone  Decision = ""
	DecisionAllow Decision = "allow"
	DecisionAsk   Decision = "ask"
	DecisionDeny  Decision = "deny"
)

func (d Decision) rank() int {
	switch d {
	case DecisionAllow:
		return 1
	case DecisionAsk:
		return 2
	case DecisionDeny:
		return 3
	}
	return 0
}

// maxReasonRunes bounds a hook's reason and each additional context.
const maxReasonRunes = 2000

// PreVerdict is what the PreToolUse hooks said about one call, combined
// deny > ask > allow.
type PreVerdict struct {
	Decision Decision
	// Reason is the deciding hook's reason: shown to the model for a deny
	// (as Claude Code does), to approvers for an ask.
	Reason string
	// By is the id of the deciding hook ("" when no hook decided).
	By string
	// Failure is set when a hook failed (timed out, crashed, answered
	// output agenthost cannot use): the call is then denied, and Reason is
	// empty (the model is not told why).
	Failure error
	// Context is every hook's additionalContext, for the model.
	Context []string
	// Ran are the ids of the hooks that ran, in order.
	Ran []string
}

// Pre runs the PreToolUse hooks whose matcher selects the call, one after
// another, and combines their answers. It stops at the first deny.
func (r *Runner) Pre(ctx context.Context, c Call) PreVerdict {
	var v PreVerdict
	if !r.HasPre() {
		return v
	}
	name := ToolName(c.Server, c.Tool)
	var stdin []byte
	for _, g := range r.pre {
		if !g.match.matches(name) {
			continue
		}
		for _, h := range g.hooks {
			if stdin == nil {
				var err error
				if stdin, err = r.input(EventPreToolUse, c, nil); err != nil {
					v.Decision, v.By, v.Failure, v.Reason = DecisionDeny, h.id, err, ""
					return v
				}
			}
			v.Ran = append(v.Ran, h.id)
			d, reason, extra, err := preAnswer(h.run(ctx, r.cwd, stdin))
			if err != nil {
				v.Decision, v.By, v.Failure, v.Reason = DecisionDeny, h.id, fmt.Errorf("hook %s: %w", h.id, err), ""
				return v
			}
			if extra != "" {
				v.Context = append(v.Context, extra)
			}
			if d.rank() > v.Decision.rank() {
				v.Decision, v.Reason, v.By = d, reason, h.id
			}
			if d == DecisionDeny {
				return v
			}
		}
	}
	return v
}

// output is the JSON a Claude Code hook may print on stdout.
type output struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput"`
}

type specificOutput struct {
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	AdditionalContext        string          `json:"additionalContext"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	UpdatedMCPToolOutput     json.RawMessage `json:"updatedMCPToolOutput"`
	UpdatedToolOutput        json.RawMessage `json:"updatedToolOutput"`
}

// parseOutput reads a hook's stdout. Empty or plain-text output carries no
// answer (Claude Code only shows it in its transcript); output that looks
// like JSON (answerBytes) must be a JSON object agenthost can read, or the
// hook failed.
func parseOutput(stdout []byte) (*output, error) {
	t := answerBytes(stdout)
	if t == nil {
		return &output{}, nil
	}
	var o output
	if err := json.Unmarshal(t, &o); err != nil {
		return nil, fmt.Errorf("%w: stdout is not a JSON object Claude Code's hooks print: %v", ErrBadOutput, err)
	}
	return &o, nil
}

// utf8BOM is the UTF-8 byte order mark some tools (PowerShell, Python's
// utf-8-sig) write first.
var utf8BOM = []byte("\xEF\xBB\xBF")

// answerBytes is the JSON text of a hook's answer, or nil when stdout is
// plain text (or empty). Output looks like JSON when its first visible
// character is '{' or '[': whitespace, control and format characters
// (a byte order mark, a zero-width space, NUL), bytes that are not UTF-8
// and terminal escape sequences (ESC [ ... m) before it are invisible, so
// they cannot make a JSON answer read as plain text. The text returned
// has the whitespace and one UTF-8 byte order mark around it removed; any
// other invisible prefix stays, and makes it JSON that does not parse (the
// hook failed: it denies).
func answerBytes(stdout []byte) []byte {
	b := stdout
	for len(b) > 0 {
		r, w := utf8.DecodeRune(b)
		switch {
		case r == '{' || r == '[':
			t := bytes.TrimSpace(stdout)
			return bytes.TrimSpace(bytes.TrimPrefix(t, utf8BOM))
		case r == '\x1b' && len(b) > 1 && b[1] == '[':
			w = csiLen(b)
		case r == utf8.RuneError || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r):
		default:
			return nil
		}
		b = b[w:]
	}
	return nil
}

// csiLen is the length of the terminal control sequence b starts with
// (ESC '[', parameter and intermediate bytes, one final byte), or of its
// part that is in b. A '{' or '[' is never taken for its final byte: it
// may be where JSON starts.
func csiLen(b []byte) int {
	i := 2
	for i < len(b) && b[i] >= 0x20 && b[i] <= 0x3f {
		i++
	}
	if i < len(b) && b[i] >= 0x40 && b[i] <= 0x7e && b[i] != '{' && b[i] != '[' {
		i++
	}
	return i
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// preAnswer turns one PreToolUse run into a decision.
func preAnswer(res result, runErr error) (Decision, string, string, error) {
	if runErr != nil {
		return DecisionDeny, "", "", runErr
	}
	if res.status == exitBlock {
		return DecisionDeny, oneLine(string(res.stderr), maxReasonRunes), "", nil
	}
	o, err := parseOutput(res.stdout)
	if err != nil {
		return DecisionDeny, "", "", err
	}
	var extra string
	d := DecisionNone
	reason := ""
	if s := o.HookSpecificOutput; s != nil {
		if !isNull(s.UpdatedInput) {
			return DecisionDeny, "", "", fmt.Errorf("%w: it returned updatedInput, and agenthost does not let hooks change a call's arguments (docs/config.md)", ErrBadOutput)
		}
		extra = oneLine(s.AdditionalContext, maxReasonRunes)
		switch s.PermissionDecision {
		case "":
		case "allow", "deny", "ask":
			d, reason = Decision(s.PermissionDecision), s.PermissionDecisionReason
		case "defer":
			// Claude Code: let the normal flow decide.
		default:
			return DecisionDeny, "", "", fmt.Errorf("%w: unknown permissionDecision %q", ErrBadOutput, oneLine(s.PermissionDecision, 40))
		}
	}
	if d == DecisionNone {
		switch strings.ToLower(o.Decision) {
		case "":
		case "approve":
			d, reason = DecisionAllow, o.Reason
		case "block":
			d, reason = DecisionDeny, o.Reason
		default:
			return DecisionDeny, "", "", fmt.Errorf("%w: unknown decision %q", ErrBadOutput, oneLine(o.Decision, 40))
		}
	}
	if o.Continue != nil && !*o.Continue {
		// Claude Code stops the whole session; agenthost denies the call.
		d, reason = DecisionDeny, o.StopReason
	}
	return d, oneLine(reason, maxReasonRunes), extra, nil
}

// PostVerdict is what the PostToolUse hooks did with one call's result.
type PostVerdict struct {
	// Withheld is set when a hook blocked the result (decision "block",
	// exit status 2, continue false) or failed: the model then gets
	// Reason instead of the result.
	Withheld bool
	Reason   string
	// Replaced is the result a hook put in its place
	// (updatedMCPToolOutput or updatedToolOutput), nil when none did.
	Replaced json.RawMessage
	// By is the id of the last hook that withheld or replaced the result.
	By string
	// Failure is set when a hook failed; the result is then withheld.
	Failure error
	// Context is every hook's additionalContext, for the model.
	Context []string
	// Ran are the ids of the hooks that ran, in order.
	Ran []string
}

// Post runs the PostToolUse hooks whose matcher selects the call, one
// after another; each sees the result as the previous one left it
// (tool_response). It stops at the first that withholds the result.
func (r *Runner) Post(ctx context.Context, c Call, response json.RawMessage) PostVerdict {
	var v PostVerdict
	if !r.HasPost() {
		return v
	}
	name := ToolName(c.Server, c.Tool)
	current := response
	for _, g := range r.post {
		if !g.match.matches(name) {
			continue
		}
		for _, h := range g.hooks {
			v.Ran = append(v.Ran, h.id)
			stdin, err := r.input(EventPostToolUse, c, current)
			if err != nil {
				v.Withheld, v.By, v.Failure = true, h.id, err
				return v
			}
			withheld, reason, replaced, extra, err := postAnswer(h.run(ctx, r.cwd, stdin))
			if err != nil {
				v.Withheld, v.By, v.Failure = true, h.id, fmt.Errorf("hook %s: %w", h.id, err)
				return v
			}
			if extra != "" {
				v.Context = append(v.Context, extra)
			}
			if withheld {
				v.Withheld, v.Reason, v.By = true, reason, h.id
				return v
			}
			if replaced != nil {
				v.Replaced, v.By, current = replaced, h.id, replaced
			}
		}
	}
	return v
}

// postAnswer turns one PostToolUse run into its effect on the result.
func postAnswer(res result, runErr error) (withheld bool, reason string, replaced json.RawMessage, extra string, err error) {
	if runErr != nil {
		return true, "", nil, "", runErr
	}
	if res.status == exitBlock {
		return true, oneLine(string(res.stderr), maxReasonRunes), nil, "", nil
	}
	o, err := parseOutput(res.stdout)
	if err != nil {
		return true, "", nil, "", err
	}
	if s := o.HookSpecificOutput; s != nil {
		extra = oneLine(s.AdditionalContext, maxReasonRunes)
		switch {
		case !isNull(s.UpdatedToolOutput):
			replaced = bytes.TrimSpace(s.UpdatedToolOutput)
		case !isNull(s.UpdatedMCPToolOutput):
			replaced = bytes.TrimSpace(s.UpdatedMCPToolOutput)
		}
	}
	switch strings.ToLower(o.Decision) {
	case "", "approve":
	case "block":
		return true, oneLine(o.Reason, maxReasonRunes), nil, extra, nil
	default:
		return true, "", nil, "", fmt.Errorf("%w: unknown decision %q", ErrBadOutput, oneLine(o.Decision, 40))
	}
	if o.Continue != nil && !*o.Continue {
		return true, oneLine(o.StopReason, maxReasonRunes), nil, extra, nil
	}
	return false, "", replaced, extra, nil
}
