package run

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
	"github.com/agenthost/agenthost/host/durable"
)

// sessionFlags are run's flags for saved sessions.
type sessionFlags struct {
	resume string
	cont   bool
	save   bool
	noSave bool
}

// saved is the flags' compose.SavedSession.
func (f *sessionFlags) saved() compose.SavedSession {
	return compose.SavedSession{Resume: f.resume, Continue: f.cont, Save: f.save, NoSave: f.noSave}
}

func (f *sessionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.resume, "resume", "", "continue the saved session ID: its unfinished turn first (an approval given meanwhile lets its call run), then the conversation")
	cmd.Flags().BoolVar(&f.cont, "continue", false, "continue the last session run in this folder (as --resume)")
	cmd.Flags().BoolVar(&f.save, "save", false, "save a one-shot run's session so that --resume or --continue can take it up (a REPL, --resume, --continue and --approve wait save without it)")
	cmd.Flags().BoolVar(&f.noSave, "no-save", false, "keep the session in memory only: nothing is saved, and it cannot be resumed")
}

// openSessions opens the saved sessions for a run that saves
// (compose.SavedSession.Saves) and settles the session id
// (compose.SavedSession.Choose: --resume's, the folder's last with
// --continue, else --session-id or a new one). resuming reports that the
// session's unfinished turns are taken up first.
func (a *app) openSessions(ctx context.Context, f *sessionFlags, interactive bool) (resuming bool, err error) {
	if f.noSave && (f.resume != "" || f.cont || f.save) {
		return false, cmdutil.UsageErr(errors.New("--no-save: cannot be combined with --save, --resume or --continue"))
	}
	saved := f.saved()
	if !saved.Saves(interactive, approvals.AnswerMode(a.opts.Session.Approve)) {
		return false, nil
	}
	if f.resume != "" && f.cont {
		return false, cmdutil.UsageErr(errors.New("--resume and --continue: give one"))
	}
	path, err := durable.DefaultPath(os.Getenv)
	if err != nil {
		return false, err
	}
	store, err := durable.OpenStore(ctx, path)
	if err != nil {
		return false, fmt.Errorf("saved sessions: %w", err)
	}
	defer store.Close()
	dir, _ := os.Getwd()
	id, resuming, err := saved.Choose(ctx, store, dir, a.opts.Session.ID)
	switch {
	case errors.Is(err, compose.ErrNoSessionHere):
		return false, cmdutil.UsageErr(errors.New("--continue: no saved session was run in this folder (`agenthost sessions list` shows them all)"))
	case err != nil && f.resume != "":
		return false, cmdutil.UsageErr(fmt.Errorf("--resume: %w", err))
	case err != nil:
		return false, err
	}
	a.opts.Session.ID = id
	e, err := durable.Open(ctx, "sqlite:"+path, durable.Options{ExecutorID: compose.SessionExecutor(id)})
	if err != nil {
		return false, fmt.Errorf("saved sessions: %w", err)
	}
	a.f.Durable = e
	return resuming, nil
}

// describeSession records the session's subject, folder and title.
func (a *app) describeSession(ctx context.Context, h *host.Host, sess *host.Session, title string) {
	if a.f.Durable == nil {
		return
	}
	dir, _ := os.Getwd()
	// The title is the prompt as the model sees it: protected values
	// masked (before it is cut, so no value is cut out of reach).
	title = cmdutil.Truncate(h.Redactor().Redact(title), 80)
	if err := a.f.Durable.Store().Describe(ctx, durable.SessionInfo{ID: sess.ID(), Subject: sess.Subject(), Dir: dir, Title: title}); err != nil {
		fmt.Fprintf(a.f.IO.ErrOut, "agenthost: warning: the session's line was not saved: %v\n", err)
	}
}

// resumeTurns takes up the session's unfinished turns, printing them as a
// turn is printed.
func (a *app) resumeTurns(ctx context.Context, sess *host.Session, format outputFormat) error {
	end, lastErr, seen := a.printEvents(sess.Resume(ctx), format)
	if !seen {
		return nil
	}
	return turnExit(end, lastErr)
}
