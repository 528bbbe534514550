package run

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
)

// TestSetUpREPL: in the REPL the approval prompt and servers' questions go
// through its program, and "always" is offered only with a config file
// beside which to keep it.
func TestSetUpREPL(t *testing.T) {
	for _, tc := range []struct {
		file   string
		always bool
	}{
		{"", false},
		{filepath.Join(t.TempDir(), "agenthost.yaml"), true},
	} {
		a := &app{f: cmdutil.New(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}), opts: &RunOptions{}}
		a.setUpREPL(&config.Config{File: tc.file})
		if a.f.Asker != a.replUI || a.f.Elicitation == nil || !a.f.PromptOptions.Reasons || a.f.PromptOptions.Detail == nil {
			t.Errorf("file %q: the Factory does not ask through the REPL: %+v", tc.file, a.f.PromptOptions)
		}
		if (a.f.PromptOptions.Always != nil) != tc.always {
			t.Errorf("file %q: always offered %t, want %t", tc.file, a.f.PromptOptions.Always != nil, tc.always)
		}
	}
}
