package approvals

import (
	"encoding/json"
	"fmt"
)

// AnswerMode is how the asks of a session are answered by whoever runs
// it: the CLI's --approve (docs/cli.md, "Session flags").
type AnswerMode string

const (
	// AnswerDefault is no mode given: AnswerPrompt where a person is at
	// a terminal, else AnswerDeny (Resolve).
	AnswerDefault AnswerMode = ""
	// AnswerPrompt asks the person at the terminal.
	AnswerPrompt AnswerMode = "prompt"
	// AnswerDeny denies every ask ([Deny]).
	AnswerDeny AnswerMode = "deny"
	// AnswerAuto approves every ask ([Auto]; deny rules still deny) and
	// accepts servers' questions with their schema's defaults
	// (ElicitationDefaults).
	AnswerAuto AnswerMode = "auto"
	// AnswerWait raises each ask in the approvals store and waits for
	// votes from anywhere ([StoreApprover]).
	AnswerWait AnswerMode = "wait"
)

// ParseAnswerMode reads a mode's name ("" is AnswerDefault).
func ParseAnswerMode(s string) (AnswerMode, error) {
	switch m := AnswerMode(s); m {
	case AnswerDefault, AnswerPrompt, AnswerDeny, AnswerAuto, AnswerWait:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of prompt, deny, auto, wait", s)
}

// Resolve is the mode that answers: AnswerDefault is AnswerPrompt when a
// person can answer (interactive: stdin is a terminal), else AnswerDeny;
// any other mode is itself.
func (m AnswerMode) Resolve(interactive bool) AnswerMode {
	switch {
	case m != AnswerDefault:
		return m
	case interactive:
		return AnswerPrompt
	}
	return AnswerDeny
}

// AcceptsQuestions reports whether servers' questions (elicitation) are
// accepted without asking anyone, with the defaults of what they ask
// (ElicitationDefaults): only AnswerAuto does; any other mode declines
// them unless a person is asked.
func (m AnswerMode) AcceptsQuestions() bool { return m == AnswerAuto }

// permissionModes are Claude Code's permission modes and the answer mode
// each stands for: acceptEdits is as default (agenthost's tools are MCP
// tools, none of them Claude Code's edits), plan and dontAsk deny what
// would be asked, bypassPermissions approves it (deny rules still deny).
var permissionModes = map[string]AnswerMode{
	"default":           AnswerDefault,
	"acceptEdits":       AnswerDefault,
	"plan":              AnswerDeny,
	"dontAsk":           AnswerDeny,
	"bypassPermissions": AnswerAuto,
}

// PermissionModeAnswer is the answer mode Claude Code's permission mode
// (`claude --permission-mode`) stands for.
func PermissionModeAnswer(permissionMode string) (AnswerMode, error) {
	m, ok := permissionModes[permissionMode]
	if !ok {
		return "", fmt.Errorf("%q is not one of default, acceptEdits, plan, dontAsk, bypassPermissions", permissionMode)
	}
	return m, nil
}

// ElicitationDefaults is the answer of AnswerAuto to a server's question:
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
