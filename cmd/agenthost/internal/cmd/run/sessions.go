package run

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/agenthost/agenthost/approvals/answermode"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
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

// check is the usage error of flags that contradict each other.
func (f *sessionFlags) check() error {
	switch {
	case f.noSave && (f.resume != "" || f.cont || f.save):
		return cmdutil.UsageErr(errors.New("--no-save: cannot be combined with --save, --resume or --continue"))
	case f.resume != "" && f.cont:
		return cmdutil.UsageErr(errors.New("--resume and --continue: give one"))
	}
	return nil
}

func (f *sessionFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.resume, "resume", "", "continue the saved session ID: its unfinished turn first (an approval given meanwhile lets its call run), then the conversation")
	cmd.Flags().BoolVar(&f.cont, "continue", false, "continue the last session run in this folder (as --resume)")
	cmd.Flags().BoolVar(&f.save, "save", false, "save a one-shot run's session so that --resume or --continue can take it up (a REPL, --resume, --continue and --approve wait save without it)")
	cmd.Flags().BoolVar(&f.noSave, "no-save", false, "keep the session in memory only: nothing is saved, and it cannot be resumed")
}

// openSessions opens the saved sessions for a run that saves
// (compose.SavedSession.Saves) and settles the session id (the
// Factory's SavedSessions: --resume's, the folder's last with
// --continue, else --session-id or a new one). resuming reports that the
// session's unfinished turns are taken up first. In a build without saved
// sessions such a run is handed over (cmdutil.NeedsFullError).
func (a *app) openSessions(ctx context.Context, f *sessionFlags, interactive bool) (resuming bool, err error) {
	if err := f.check(); err != nil {
		return false, err
	}
	saved := f.saved()
	if !saved.Saves(interactive, answermode.Mode(a.opts.Session.Approve)) {
		return false, nil
	}
	sessions := a.f.Features.Sessions
	if sessions == nil {
		return false, &cmdutil.NeedsFullError{What: "saved sessions (a REPL, --save, --resume, --continue, --approve wait)"}
	}
	dir, _ := os.Getwd()
	e, id, resuming, err := sessions.Open(ctx, saved, dir, a.opts.Session.ID)
	if err != nil {
		return false, err
	}
	a.opts.Session.ID = id
	a.f.Durable = e
	a.saved = e
	return resuming, nil
}

// describeSession records the session's subject, folder and title.
func (a *app) describeSession(ctx context.Context, h *host.Host, sess *host.Session, title string) {
	if a.saved == nil {
		return
	}
	dir, _ := os.Getwd()
	// The title is the prompt as the model sees it: protected values
	// masked (before it is cut, so no value is cut out of reach).
	title = cmdutil.Truncate(h.Redactor().Redact(title), 80)
	if err := a.saved.Describe(ctx, sess.ID(), sess.Subject(), dir, title); err != nil {
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
