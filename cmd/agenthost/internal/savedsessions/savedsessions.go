// Package savedsessions is the saved sessions of `agenthost run` (a REPL,
// --save, --resume, --continue; docs/cli.md "Saved sessions"): which
// session a run takes up, and the durable engine on the SQLite file that
// runs its turns (host/durable). It is linked only into the full build
// (cmd/agenthost-full), with the engine and the SQLite driver beneath it;
// the lean build hands such a run over (docs/cli.md "Two binaries").
package savedsessions

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/durable"
)

// Sessions opens the saved sessions; it is a cmdutil.SavedSessions.
type Sessions struct{}

// Open settles the id of the session of a run that saves (Choose) and
// opens the durable engine that runs its turns, with one executor per
// session (SessionExecutor). resuming reports that the session's
// unfinished turns are taken up first. A --resume or --continue that
// finds nothing is a usage error.
func (Sessions) Open(ctx context.Context, s compose.SavedSession, dir, id string) (_ cmdutil.SavedEngine, chosen string, resuming bool, err error) {
	path, err := durable.DefaultPath(os.Getenv)
	if err != nil {
		return nil, "", false, err
	}
	store, err := durable.OpenStore(ctx, path)
	if err != nil {
		return nil, "", false, fmt.Errorf("saved sessions: %w", err)
	}
	defer store.Close()
	chosen, resuming, err = Choose(ctx, store, s, dir, id)
	switch {
	case errors.Is(err, ErrNoSessionHere):
		return nil, "", false, cmdutil.UsageErr(errors.New("--continue: no saved session was run in this folder (`agenthost sessions list` shows them all)"))
	case err != nil && s.Resume != "":
		return nil, "", false, cmdutil.UsageErr(fmt.Errorf("--resume: %w", err))
	case err != nil:
		return nil, "", false, err
	}
	e, err := durable.Open(ctx, "sqlite:"+path, durable.Options{ExecutorID: SessionExecutor(chosen)})
	if err != nil {
		return nil, "", false, fmt.Errorf("saved sessions: %w", err)
	}
	return engine{e}, chosen, resuming, nil
}

// engine is a durable.Engine that records a session's line.
type engine struct{ *durable.Engine }

// Describe records the session's subject, folder and title.
func (e engine) Describe(ctx context.Context, id, subject, dir, title string) error {
	return e.Store().Describe(ctx, durable.SessionInfo{ID: id, Subject: subject, Dir: dir, Title: title})
}

// ErrNoSessionHere says Continue found no saved session run in the folder.
var ErrNoSessionHere = errors.New("no saved session was run in this folder")

// Choose settles the id of the session of a run that saves: s.Resume's
// (it must be in store: its error otherwise), the last one run in dir
// with s.Continue (ErrNoSessionHere when there is none), else id, or a
// new one when id is "". resuming reports that the session's unfinished
// turns are taken up first.
func Choose(ctx context.Context, store *durable.Store, s compose.SavedSession, dir, id string) (_ string, resuming bool, err error) {
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

// Store opens the saved sessions' index (`agenthost sessions list` and
// `show`); the caller closes it.
func Store(ctx context.Context) (*durable.Store, error) {
	path, err := durable.DefaultPath(os.Getenv)
	if err != nil {
		return nil, err
	}
	return durable.OpenStore(ctx, path)
}
