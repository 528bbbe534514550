package compose

import (
	"testing"

	"github.com/agenthost/agenthost/approvals/answermode"
)

func TestSavedSessionSaves(t *testing.T) {
	for _, tc := range []struct {
		name        string
		s           SavedSession
		interactive bool
		mode        answermode.Mode
		want        bool
	}{
		{"a one-shot run", SavedSession{}, false, answermode.Default, false},
		{"a one-shot run answered auto", SavedSession{}, false, answermode.Auto, false},
		{"a REPL", SavedSession{}, true, answermode.Default, true},
		{"save", SavedSession{Save: true}, false, answermode.Default, true},
		{"resume", SavedSession{Resume: "s"}, false, answermode.Default, true},
		{"continue", SavedSession{Continue: true}, false, answermode.Default, true},
		{"waiting for votes", SavedSession{}, false, answermode.Wait, true},
		{"no-save wins", SavedSession{NoSave: true}, true, answermode.Wait, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Saves(tc.interactive, tc.mode); got != tc.want {
				t.Errorf("Saves = %t, want %t", got, tc.want)
			}
		})
	}
}
