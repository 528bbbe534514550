package compose

import (
	"context"
	"errors"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/host/durable"
)

// SavedSession is how a run takes up and keeps saved sessions (the CLI's
// --resume, --continue, --save and --no-save; docs/cli.md, "sessions").
type SavedSession struct {
	// Resume is the id of the saved session to continue ("" for none);
	// Continue continues the last session run in the folder.
	Resume   string
	Continue bool
	// Save keeps a one-shot run's session; NoSave keeps none.
	Save, NoSave bool
}

// Saves reports whether a run keeps its session in the saved sessions: an
// interactive run (a REPL) does, and so does a run that resumes, waits for
// votes from elsewhere (approvals.AnswerWait: its call must survive the
// process) or is told to (Save); NoSave keeps none. A one-shot run
// otherwise stays in memory, so that a script's run costs no more than it
// did before sessions were saved.
func (s SavedSession) Saves(interactive bool, mode approvals.AnswerMode) bool {
	if s.NoSave {
		return false
	}
	return interactive || s.Save || s.Resume != "" || s.Continue || mode == approvals.AnswerWait
}

// ErrNoSessionHere says Continue found no saved session run in the folder.
var ErrNoSessionHere = errors.New("no saved session was run in this folder")

// Choose settles the id of the session of a run that saves: Resume's (it
// must be in store: its error otherwise), the last one run in dir with
// Continue (ErrNoSessionHere when there is none), else id, or a new one
// when id is "". resuming reports that the session's unfinished turns are
// taken up first.
func (s SavedSession) Choose(ctx context.Context, store *durable.Store, dir, id string) (_ string, resuming bool, err error) {
	switch {
	case s.Resume != "":
		if _, err := store.Session(ctx, s.Resume); err != nil {
			return "", false, err
		}
		return s.Resume, true, nil
	case s.Continue:
		list, err := store.Sessions(ctx, durable.ListOptions{Dir: dir, Limit: 1})
		if err != nil {
			return "", false, err
		}
		if len(list) == 0 {
			return "", false, ErrNoSessionHere
		}
		return list[0].ID, true, nil
	case id == "":
		return durable.NewSessionID(), false, nil
	}
	return id, false, nil
}

// SessionExecutor is the durable executor id of a saved session's run:
// one executor per session, so that a restarted run takes up this
// session's unfinished turns, and no other's.
func SessionExecutor(sessionID string) string { return "cli-" + sessionID }
