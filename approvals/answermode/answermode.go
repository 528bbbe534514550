// Package answermode is how the asks of a session are answered by whoever
// runs it: the CLI's --approve modes, Claude Code's permission modes, and
// the answer of auto to a server's question (docs/cli.md, "Session
// flags").
package answermode

import (
	"encoding/json"
	"fmt"
)

// Mode is how the asks of a session are answered by whoever runs
// it: the CLI's --approve (docs/cli.md, "Session flags").
type Mode string

const (
	// Default is no mode given: Prompt where a person is at
	// a terminal, else Deny (Resolve).
	Default Mode = ""
	// Prompt asks the person at the terminal.
	Prompt Mode = "prompt"
	// Deny denies every ask (approvals.Deny).
	Deny Mode = "deny"
	// Auto approves every ask (approvals.Auto; deny rules still deny) and
	// accepts servers' questions with their schema's defaults
	// (ElicitationDefaults).
	Auto Mode = "auto"
	// Wait raises each ask in the approvals store and waits for
	// votes from anywhere (approvals.StoreApprover).
	Wait Mode = "wait"
)

// Parse reads a mode's name ("" is Default).
func Parse(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Default, Prompt, Deny, Auto, Wait:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of prompt, deny, auto, wait", s)
}

// Resolve is the mode that answers: Default is Prompt when a
// person can answer (interactive: stdin is a terminal), else Deny;
// any other mode is itself.
func (m Mode) Resolve(interactive bool) Mode {
	switch {
	case m != Default:
		return m
	case interactive:
		return Prompt
	}
	return Deny
}

// AcceptsQuestions reports whether servers' questions (elicitation) are
// accepted without asking anyone, with the defaults of what they ask
// (ElicitationDefaults): only Auto does; any other mode declines
// them unless a person is asked.
func (m Mode) AcceptsQuestions() bool { return m == Auto }

// permissionModes are Claude Code's permission modes and the answer mode
// each stands for: acceptEdits is as default (agenthost's tools are MCP
// tools, none of them Claude Code's edits), plan and dontAsk deny what
// would be asked, bypassPermissions approves it (deny rules still deny).
var permissionModes = map[string]Mode{
	"default":           Default,
	"acceptEdits":       Default,
	"plan":              Deny,
	"dontAsk":           Deny,
	"bypassPermissions": Auto,
}

// FromPermissionMode is the answer mode Claude Code's permission mode
// (`claude --permission-mode`) stands for.
func FromPermissionMode(permissionMode string) (Mode, error) {
	m, ok := permissionModes[permissionMode]
	if !ok {
		return "", fmt.Errorf("%q is not one of default, acceptEdits, plan, dontAsk, bypassPermissions", permissionMode)
	}
	return m, nil
}

// ElicitationDefaults is the answer of Auto to a server's question:
// an object holding the default of every top-level property of the
// requested schema that declares one (SEP-1034), and nothing for the
// others.
func ElicitationDefaults(schema any) map[string]any {
	content := map[string]any{}
	raw, err := json.Marshal(schema)
	if err != nil {
		return content
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return content
	}
	for name, p := range s.Properties {
		// A null default is none: null is no value of the primitive
		// types an elicitation asks for.
		if len(p.Default) > 0 && string(p.Default) != "null" {
			content[name] = p.Default
		}
	}
	return content
}
