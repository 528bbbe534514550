package compose

import "github.com/agenthost/agenthost/approvals/answermode"

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
// votes from elsewhere (answermode.Wait: its call must survive the
// process) or is told to (Save); NoSave keeps none. A one-shot run
// otherwise stays in memory, so that a script's run costs no more than it
// did before sessions were saved.
func (s SavedSession) Saves(interactive bool, mode answermode.Mode) bool {
	if s.NoSave {
		return false
	}
	return interactive || s.Save || s.Resume != "" || s.Continue || mode == answermode.Wait
}
