package compose

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host/durable"
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

// TestSavedSessionChoose: --resume takes a saved session, --continue the
// folder's last, else the id given or a new one.
func TestSavedSessionChoose(t *testing.T) {
	ctx := context.Background()
	store, err := durable.OpenStore(ctx, filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for _, info := range []durable.SessionInfo{{ID: "old", Dir: "/srv/proj-a"}, {ID: "last", Dir: "/srv/proj-a"}, {ID: "other", Dir: "/srv/proj-b"}} {
		if err := store.Describe(ctx, info); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		s        SavedSession
		dir, id  string
		want     string
		resuming bool
		err      error
	}{
		{"resume", SavedSession{Resume: "old"}, "/srv/proj-b", "x", "old", true, nil},
		{"resume an unknown session", SavedSession{Resume: "gone"}, "/srv/proj-a", "", "", false, durable.ErrUnknownSession},
		{"continue", SavedSession{Continue: true}, "/srv/proj-b", "x", "other", true, nil},
		{"continue where none ran", SavedSession{Continue: true}, "/srv/proj-c", "", "", false, ErrNoSessionHere},
		{"the id given", SavedSession{Save: true}, "/srv/proj-a", "mine", "mine", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, resuming, err := tc.s.Choose(ctx, store, tc.dir, tc.id)
			if !errors.Is(err, tc.err) || id != tc.want || resuming != tc.resuming {
				t.Errorf("Choose = %q, %t, %v; want %q, %t, %v", id, resuming, err, tc.want, tc.resuming, tc.err)
			}
		})
	}
	a, _, errA := SavedSession{}.Choose(ctx, store, "/srv/proj-a", "")
	b, _, errB := SavedSession{}.Choose(ctx, store, "/srv/proj-a", "")
	if errA != nil || errB != nil || a == "" || a == b {
		t.Errorf("new ids %q, %q: %v, %v", a, b, errA, errB)
	}
	if SessionExecutor("s-1") != "cli-s-1" {
		t.Errorf("executor %q", SessionExecutor("s-1"))
	}
}
