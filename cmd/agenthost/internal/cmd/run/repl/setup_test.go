package repl

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
		f := cmdutil.New(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}})
		a := REPL{}.SetUp(f, &config.Config{File: tc.file}).(*app)
		if f.Asker != a.ui || f.Elicitation == nil || !f.PromptOptions.Reasons || f.PromptOptions.Detail == nil {
			t.Errorf("file %q: the Factory does not ask through the REPL: %+v", tc.file, f.PromptOptions)
		}
		if (f.PromptOptions.Always != nil) != tc.always {
			t.Errorf("file %q: always offered %t, want %t", tc.file, f.PromptOptions.Always != nil, tc.always)
		}
	}
}
