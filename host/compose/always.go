package compose

import (
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agenthost/agenthost/approvals/rules"
	"github.com/agenthost/agenthost/config"
)

// AlwaysAnswers are the answers "always" given at a terminal's approval
// question: each is an allow rule for every call of one tool
// (config.AlwaysEntry), kept in the local settings file beside the
// configuration file (config.Local) and loaded with the configuration the
// next time it is read. With no configuration file there is no place to
// keep them, and "always" is not offered. The CLI's REPL saves, lists and
// removes them here; it is safe for concurrent use.
type AlwaysAnswers struct {
	mu sync.Mutex
	l  *config.Local // nil: no configuration file
}

// NewAlwaysAnswers are the answers "always" of cfg: those its local
// settings file holds (cfg.Local), kept in config.LocalPath(cfg.File).
func NewAlwaysAnswers(cfg *config.Config) *AlwaysAnswers {
	if cfg.File == "" {
		return &AlwaysAnswers{}
	}
	l := cfg.Local
	if l == nil {
		l = &config.Local{Path: config.LocalPath(cfg.File)}
	}
	return &AlwaysAnswers{l: l}
}

// Offered reports whether an answer "always" can be kept (there is a
// configuration file).
func (a *AlwaysAnswers) Offered() bool { return a.l != nil }

// Path is the local settings file ("" when none is offered).
func (a *AlwaysAnswers) Path() string {
	if a.l == nil {
		return ""
	}
	return a.l.Path
}

// Save keeps the answer "always" for the tool (once: a tool answered
// before is kept as it is) and returns the id of its rule.
func (a *AlwaysAnswers) Save(server, tool string, now time.Time) (ruleID string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.l == nil {
		return "", fmt.Errorf("no configuration file, so no local settings file beside it")
	}
	if err := a.l.AddAlways(server, tool, now); err != nil {
		return "", err
	}
	return config.AlwaysEntry{Server: server, Tool: tool}.RuleID(), nil
}

// Entries are the answers kept, in the order they were given.
func (a *AlwaysAnswers) Entries() []config.AlwaysEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.l == nil {
		return nil
	}
	return slices.Clone(a.l.Approvals.Always)
}

// NoAnswerError says Remove found no answer: Arg as given; Number says it
// was a number (N), out of the list's range.
type NoAnswerError struct {
	Arg    string
	Number bool
	N      int
}

func (e *NoAnswerError) Error() string {
	if e.Number {
		return fmt.Sprintf("no answer %d", e.N)
	}
	return fmt.Sprintf("no answer %q", e.Arg)
}

// Remove removes the answer arg names: its number in Entries (1-based) or
// its rule id. It returns the rule id removed; a *NoAnswerError when there
// is no such answer, or the local settings file's error when it could not
// be saved. The policy the session loaded at its start still holds the
// rule: it stops applying when the configuration is next loaded.
func (a *AlwaysAnswers) Remove(arg string) (ruleID string, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.l == nil {
		return "", &NoAnswerError{Arg: arg}
	}
	id := arg
	if n, err := strconv.Atoi(arg); err == nil {
		if n < 1 || n > len(a.l.Approvals.Always) {
			return "", &NoAnswerError{Arg: arg, Number: true, N: n}
		}
		id = a.l.Approvals.Always[n-1].RuleID()
	}
	ok, err := a.l.Remove(id)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", &NoAnswerError{Arg: arg}
	}
	return id, nil
}

// Reuse is which earlier answer decided a call without asking.
type Reuse int

const (
	// ReuseNone: no earlier answer (the call was asked, or decided by the
	// configuration's rules).
	ReuseNone Reuse = iota
	// ReuseAlways: an answer "always" (its rule allowed the call).
	ReuseAlways
	// ReuseSession: an answer "for this session" (a session grant).
	ReuseSession
)

// Reused is which earlier answer decided a call of the tool, from the
// call's approval decision and outcome (host.Event's): an allow of a tool
// answered "always", or the session grant's outcome.
func (a *AlwaysAnswers) Reused(server, tool, decision, outcome string) Reuse {
	a.mu.Lock()
	has := a.l != nil && a.l.Has(server, tool)
	a.mu.Unlock()
	switch {
	case has && decision == "allow":
		return ReuseAlways
	case outcome == string(rules.OutcomeGranted):
		return ReuseSession
	}
	return ReuseNone
}
