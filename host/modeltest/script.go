package modeltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// Script is the ordered list of answers, one Step per chat-completions
// request. It is JSON: a top-level array of steps.
type Script []Step

// Step answers one request. Text and ToolCalls make a completion; Status
// makes an HTTP error instead; Delay and Hang change when (or whether) the
// answer is sent; Expect asserts on the request before answering.
type Step struct {
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`

	Status     int    `json:"status,omitempty"`
	RetryAfter string `json:"retryAfter,omitempty"`
	Body       string `json:"body,omitempty"`

	Delay time.Duration `json:"-"` // "delay" in JSON, a time.ParseDuration string
	Hang  bool          `json:"hang,omitempty"`

	Expect *Expect `json:"expect,omitempty"`
	Usage  *Usage  `json:"usage,omitempty"`
}

// ToolCall is one tool call the model emits. Arguments is the raw string the
// model sends, passed through verbatim even when it is not valid JSON.
type ToolCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments,omitempty"`
	ID        string `json:"id,omitempty"`
}

// Expect holds assertions on the request a step answers. A failed assertion
// is recorded and answered with HTTP 500 naming it.
type Expect struct {
	// LastToolResultContains must be a substring of the last tool message.
	LastToolResultContains string `json:"lastToolResultContains,omitempty"`
	// LastUserContains must be a substring of the last user message.
	LastUserContains string `json:"lastUserContains,omitempty"`
	// ToolsInclude and ToolsExclude are function names that must (not)
	// appear in the request's tools.
	ToolsInclude []string `json:"toolsInclude,omitempty"`
	ToolsExclude []string `json:"toolsExclude,omitempty"`
	// BodyExcludes must not occur in the request body, raw or JSON-decoded.
	// Failures name the index, never the value, since these are canaries.
	BodyExcludes []string `json:"bodyExcludes,omitempty"`
}

// Usage is the token usage reported for a step; when absent it is estimated
// from the sizes of the request and the answer.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// CachedTokens are the prompt tokens reported as read from the
	// provider's cache (prompt_tokens_details.cached_tokens; at most
	// PromptTokens).
	CachedTokens int `json:"cached_tokens,omitempty"`
}

// ErrInvalidScript is wrapped by every script parsing and validation error.
var ErrInvalidScript = errors.New("invalid fakellm script")

// stepJSON is Step's wire shape: Delay as a duration string.
type stepJSON struct {
	stepFields
	Delay string `json:"delay,omitempty"`
}

type stepFields Step // drops Step's methods so encoding/json does not recurse

// MarshalJSON writes Delay as a duration string such as "2s".
func (s Step) MarshalJSON() ([]byte, error) {
	out := stepJSON{stepFields: stepFields(s)}
	if s.Delay != 0 {
		out.Delay = s.Delay.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads a step, rejecting unknown keys so that a typo in a
// script fails loudly instead of silently changing the test.
func (s *Step) UnmarshalJSON(data []byte) error {
	var in stepJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return err
	}
	*s = Step(in.stepFields)
	if in.Delay != "" {
		d, err := time.ParseDuration(in.Delay)
		if err != nil {
			return fmt.Errorf("delay: %w", err)
		}
		s.Delay = d
	}
	return nil
}

// ParseScript decodes and validates a JSON script.
func ParseScript(data []byte) (Script, error) {
	var script Script
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&script); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScript, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the step array", ErrInvalidScript)
	}
	if err := script.Validate(); err != nil {
		return nil, err
	}
	return script, nil
}

// LoadScript reads and validates a JSON script file.
func LoadScript(path string) (Script, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading script: %w", err)
	}
	script, err := ParseScript(data)
	if err != nil {
		return nil, fmt.Errorf("script %s: %w", path, err)
	}
	return script, nil
}

// Validate reports the first step that cannot be played as written.
func (s Script) Validate() error {
	for i, step := range s {
		if problem := step.problem(); problem != "" {
			return fmt.Errorf("%w: step %d: %s", ErrInvalidScript, i, problem)
		}
	}
	return nil
}

// problem describes why the step cannot be played, or is empty.
func (s Step) problem() string {
	answers := s.Text != "" || len(s.ToolCalls) > 0
	switch {
	case s.Status != 0 && (s.Status < 400 || s.Status > 599):
		return fmt.Sprintf("status %d is not an HTTP error (400-599)", s.Status)
	case s.Status != 0 && answers:
		return "a status step cannot also have text or toolCalls"
	case s.Status != 0 && s.Hang:
		return "a status step cannot also hang"
	case s.Status == 0 && (s.RetryAfter != "" || s.Body != ""):
		return "retryAfter and body need a status"
	case s.Delay < 0:
		return "delay is negative"
	case s.Usage != nil && (s.Usage.PromptTokens < 0 || s.Usage.CompletionTokens < 0 || s.Usage.CachedTokens < 0):
		return "usage is negative"
	case s.Usage != nil && s.Usage.CachedTokens > s.Usage.PromptTokens:
		return "usage has more cached tokens than prompt tokens"
	}
	ids := map[string]bool{}
	for j, call := range s.ToolCalls {
		if call.Name == "" {
			return fmt.Sprintf("toolCalls[%d] has no name", j)
		}
		if call.ID != "" && ids[call.ID] {
			return fmt.Sprintf("toolCalls[%d] repeats id %q", j, call.ID)
		}
		ids[call.ID] = true
	}
	return ""
}

// callID is the id the model gives call j of step i.
func (c ToolCall) callID(step, j int) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%d_%d", step, j)
}
