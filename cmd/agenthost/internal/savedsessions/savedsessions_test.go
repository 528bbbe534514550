package savedsessions

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/durable"
)

// TestChoose: --resume takes a saved session, --continue the folder's
// last, else the id given or a new one.
func TestChoose(t *testing.T) {
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
		s        compose.SavedSession
		dir, id  string
		want     string
		resuming bool
		err      error
	}{
		{"resume", compose.SavedSession{Resume: "old"}, "/srv/proj-b", "x", "old", true, nil},
		{"resume an unknown session", compose.SavedSession{Resume: "gone"}, "/srv/proj-a", "", "", false, durable.ErrUnknownSession},
		{"continue", compose.SavedSession{Continue: true}, "/srv/proj-b", "x", "other", true, nil},
		{"continue where none ran", compose.SavedSession{Continue: true}, "/srv/proj-c", "", "", false, ErrNoSessionHere},
		{"the id given", compose.SavedSession{Save: true}, "/srv/proj-a", "mine", "mine", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, resuming, err := Choose(ctx, store, tc.s, tc.dir, tc.id)
			if !errors.Is(err, tc.err) || id != tc.want || resuming != tc.resuming {
				t.Errorf("Choose = %q, %t, %v; want %q, %t, %v", id, resuming, err, tc.want, tc.resuming, tc.err)
			}
		})
	}
	a, _, errA := Choose(ctx, store, compose.SavedSession{}, "/srv/proj-a", "")
	b, _, errB := Choose(ctx, store, compose.SavedSession{}, "/srv/proj-a", "")
	if errA != nil || errB != nil || a == "" || a == b {
		t.Errorf("new ids %q, %q: %v, %v", a, b, errA, errB)
	}
	if SessionExecutor("s-1") != "cli-s-1" {
		t.Errorf("executor %q", SessionExecutor("s-1"))
	}
}
