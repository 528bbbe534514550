package compose

import (
	"testing"

	"github.com/agenthost/agenthost/approvals"
)

func TestSavedSessionSaves(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           SavedSession
		interactive bool
		mode        approvals.AnswerMode
		want        bool
	}{
		{"a one-shot run", SavedSession{}, false, approvals.AnswerDefault, false},
		{"a one-shot run answered auto", SavedSession{}, false, approvals.AnswerAuto, false},
		{"a REPL", SavedSession{}, true, approvals.AnswerDefault, true},
		{"save", SavedSession{Save: true}, false, approvals.AnswerDefault, true},
		{"resume", SavedSession{Resume: "s"}, false, approvals.AnswerDefault, true},
		{"continue", SavedSession{Continue: true}, false, approvals.AnswerDefault, true},
		{"waiting for votes", SavedSession{}, false, approvals.AnswerWait, true},
		{"no-save wins", SavedSession{NoSave: true}, true, approvals.AnswerWait, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Saves(tc.interactive, tc.mode); got != tc.want {
				t.Errorf("Saves = %t, want %t", got, tc.want)
			}
		})
	}
}
