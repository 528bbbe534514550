package hooks

import (
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/agenthost/agenthost/internal/childproc"
)

// Config is the hooks section of the configuration, in the shape of Claude
// Code's settings: per event, a list of matcher groups, each with the
// commands to run for the tools its matcher selects.
type Config struct {
	PreToolUse  []Group `json:"PreToolUse" yaml:"PreToolUse"`
	PostToolUse []Group `json:"PostToolUse" yaml:"PostToolUse"`
	// PermissionRequest hooks run when a call needs approval; each votes
	// as its Approver identity, counted like any other approver, but
	// never enough on its own (a person must approve too).
	PermissionRequest []Group `json:"PermissionRequest" yaml:"PermissionRequest"`
}

// Group is one matcher and its hooks.
type Group struct {
	// Matcher selects tools by their Claude Code name,
	// mcp__<server>__<tool>: empty or "*" matches every tool; a matcher of
	// letters, digits, '_' , '-' and '|' is a list of exact names;
	// anything else is a regular expression searched in the name (as
	// Claude Code does), so "mcp__orders__.*" selects a server's tools.
	Matcher string `json:"matcher" yaml:"matcher"`
	Hooks   []Hook `json:"hooks" yaml:"hooks"`
}

// Hook is one command.
type Hook struct {
	// Type must be "command" (the only type agenthost runs).
	Type string `json:"type" yaml:"type"`
	// Command is run by /bin/sh -c, as Claude Code runs it, unless Args or
	// SHA256 is set, or it is a single word without shell characters:
	// then it names an executable run directly, with Args (a path relative
	// to the config file's folder, a bare name looked up in PATH; the file
	// found is the one pinned and run).
	Command string   `json:"command" yaml:"command"`
	Args    []string `json:"args" yaml:"args"`
	// Timeout is in seconds, as in Claude Code; zero means DefaultTimeout.
	Timeout float64 `json:"timeout" yaml:"timeout"`
	// SHA256 pins the executable's content (hex): a file that does not
	// match is not run, and the call is denied; a file that matches runs
	// from a sealed copy of the bytes that were hashed, so it cannot be
	// swapped between the check and the exec. agenthost addition.
	SHA256 string `json:"sha256" yaml:"sha256"`
	// ID names the hook in audit records and logs ("hook:<id>"); the
	// default is the command's base name. agenthost addition.
	ID string `json:"id" yaml:"id"`
	// Env is added to the hook's environment (which otherwise holds only
	// the basic variables of package childproc). agenthost addition.
	Env map[string]string `json:"env" yaml:"env"`
	// Approver is the identity a PermissionRequest hook votes as
	// (required there, unused elsewhere). agenthost addition.
	Approver string `json:"approver" yaml:"approver"`
	// Sandbox confines the hook and everything it starts, in the schema of
	// a server's sandbox block, when its mode is enforce; it needs a
	// supervisor (Options.Supervisor), and a hook whose sandbox cannot be
	// applied fails (and denies). The top-level sandbox does not apply to
	// hooks. agenthost addition.
	Sandbox *childproc.SandboxConfig `json:"sandbox" yaml:"sandbox"`
}

// DefaultTimeout bounds a hook without a timeout (Claude Code's default).
const DefaultTimeout = 60 * time.Second

// maxTimeout bounds a configured timeout.
const maxTimeout = time.Hour

// FieldError is one configuration problem; Key is relative to the hooks
// section ("PreToolUse[0].hooks[1].command").
type FieldError struct {
	Key string
	Msg string
}

// Error returns "key: message".
func (e *FieldError) Error() string { return e.Key + ": " + e.Msg }

// Validate reports every problem in the configuration: nil, or an
// errors.Join of *FieldError values in config order.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	for _, ev := range []struct {
		name   string
		groups []Group
	}{{EventPreToolUse, c.PreToolUse}, {EventPostToolUse, c.PostToolUse}, {EventPermissionRequest, c.PermissionRequest}} {
		for gi, g := range ev.groups {
			gkey := fmt.Sprintf("%s[%d]", ev.name, gi)
			if _, err := compileMatcher(g.Matcher); err != nil {
				add(gkey+".matcher", "not a valid regular expression: %v", err)
			}
			if len(g.Hooks) == 0 {
				add(gkey+".hooks", "no hooks: list at least one {type: command, command: ...}")
			}
			for hi, h := range g.Hooks {
				hkey := fmt.Sprintf("%s.hooks[%d]", gkey, hi)
				if h.Type != "command" {
					add(hkey+".type", "must be \"command\" (the only hook type agenthost runs)")
				}
				if strings.TrimSpace(h.Command) == "" {
					add(hkey+".command", "empty: name the command to run")
				}
				if h.Timeout < 0 || time.Duration(h.Timeout*float64(time.Second)) > maxTimeout {
					add(hkey+".timeout", "must be between 0 (the default, %s) and %s, in seconds", DefaultTimeout, maxTimeout)
				}
				if ev.name == EventPermissionRequest && strings.TrimSpace(h.Approver) == "" {
					add(hkey+".approver", "required for PermissionRequest hooks: the approver identity the hook votes as")
				}
				if h.SHA256 != "" {
					if b, err := hex.DecodeString(h.SHA256); err != nil || len(b) != 32 {
						add(hkey+".sha256", "must be 64 hex digits (the SHA-256 of the executable)")
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Empty reports whether no hook is configured.
func (c *Config) Empty() bool {
	return len(c.PreToolUse) == 0 && len(c.PostToolUse) == 0 && len(c.PermissionRequest) == 0
}

// Event names, as in Claude Code.
const (
	EventPreToolUse  = "PreToolUse"
	EventPostToolUse = "PostToolUse"
	// EventPermissionRequest: Claude Code runs it when it would show a
	// permission prompt; agenthost when a call needs approval.
	EventPermissionRequest = "PermissionRequest"
)

// simpleMatcher says whether m is a matcher Claude Code reads as a list of
// exact names: one or more of A-Z, a-z, 0-9, '_', '|' and '-'.
func simpleMatcher(m string) bool {
	if m == "" {
		return false
	}
	for i := range len(m) {
		if c := m[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '|' || c == '-') {
			return false
		}
	}
	return true
}

// matcher selects tools by their Claude Code name.
type matcher struct {
	all   bool
	exact []string
	re    *regexp.Regexp
}

func compileMatcher(m string) (matcher, error) {
	switch {
	case m == "" || m == "*":
		return matcher{all: true}, nil
	case simpleMatcher(m):
		return matcher{exact: strings.Split(m, "|")}, nil
	}
	re, err := regexp.Compile(m)
	if err != nil {
		return matcher{}, err
	}
	return matcher{re: re}, nil
}

func (m matcher) matches(name string) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.MatchString(name)
	}
	for _, e := range m.exact {
		if e == name {
			return true
		}
	}
	return false
}

// ToolName is the name a Claude Code hook sees for an MCP tool:
// mcp__<server>__<tool>.
func ToolName(server, tool string) string {
	return "mcp__" + server + "__" + tool
}
