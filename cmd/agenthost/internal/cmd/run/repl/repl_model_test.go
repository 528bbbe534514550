package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
)

func testModel(t *testing.T) *replModel {
	t.Helper()
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	a := &app{f: cmdutil.New(&cmdutil.IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}}), session: &cmdutil.SessionFlags{}}
	a.local = newLocalAlways(&config.Config{})
	ui := &replUI{done: make(chan struct{}), labels: map[string]string{}}
	return newReplModel(context.Background(), a, nil, ui, "", host.TurnOptions{})
}

// A large paste is held aside as a placeholder and sent as it was; a small
// one goes into the editor as it is, line ends made \n.
func TestREPLPaste(t *testing.T) {
	m := testModel(t)
	m.paste("small\r\npaste")
	if got := m.editor.Value(); got != "small\npaste" {
		t.Errorf("small paste: %q", got)
	}
	m.editor.Reset()
	big := strings.Repeat("line\n", 10)
	m.paste(big)
	v := m.editor.Value()
	if !strings.HasPrefix(v, "[pasted text #1: 50 bytes, 11 lines]") {
		t.Errorf("placeholder: %q", v)
	}
	if got := m.expand(v); got != big {
		t.Errorf("expanded: %q", got)
	}
}

// A line ending in \ continues on the next; an empty message is not sent;
// an oversized one is refused with its size.
func TestREPLEnter(t *testing.T) {
	m := testModel(t)
	m.editor.SetValue(`first\`)
	m.enter()
	if m.editor.Value() != "first\n" {
		t.Errorf("continuation: %q", m.editor.Value())
	}
	m.editor.SetValue("   ")
	if m.enter() != nil || m.running {
		t.Error("a blank message was sent")
	}
	m.editor.SetValue(strings.Repeat("x", maxPrompt+1))
	m.enter()
	if !strings.HasPrefix(m.notice, "not sent: the message is 1,048,577 bytes, over the limit of 1,048,576") {
		t.Errorf("notice: %q", m.notice)
	}
}

func TestREPLSlashCommands(t *testing.T) {
	for _, tc := range []struct {
		line, want string
	}{
		{"/help", "/tools                 the tools of every server"},
		{"/cost", "0 turns; tokens: 0 prompt, 0 completion, 0 total"},
		{"/approvals", "no config file, so no local settings file"},
		{"/approvals remove 1", "no local settings file"},
		{"/nope", "unknown command /nope; /help lists them"},
	} {
		m := testModel(t)
		m.printing = true // a print in flight: the lines wait in m.out
		m.slash(tc.line)
		out := strings.Join(m.out, "\n")
		if !strings.HasPrefix(out, tc.line+"\n") || !strings.Contains(out, tc.want) {
			t.Errorf("%s printed %q, want %q", tc.line, out, tc.want)
		}
	}
	m := testModel(t)
	if m.slash("/exit") == nil || !m.quitting {
		t.Error("/exit does not quit")
	}
}

// Ctrl-C clears a line first, then warns, and a second one at an empty
// prompt leaves.
func TestREPLCtrlC(t *testing.T) {
	m := testModel(t)
	m.editor.SetValue("draft")
	if m.ctrlC() != nil || m.editor.Value() != "" {
		t.Errorf("the first Ctrl-C clears the line: %q", m.editor.Value())
	}
	if m.ctrlC() != nil || !strings.Contains(m.notice, "press Ctrl-C again to leave") {
		t.Errorf("notice %q", m.notice)
	}
	if m.ctrlC() == nil || !m.quitting {
		t.Error("the second Ctrl-C does not leave")
	}
}

// An approval's diff lines (writediff decides what a call changes; its
// tests are there): the note or the diff, indented under the question and
// escaped; nothing for a call that writes no file.
func TestFileDiffLines(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("one\ntwo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	for _, tc := range []struct {
		name string
		raw  json.RawMessage
		want string
	}{
		{"an edit", args(map[string]any{"path": "a.txt", "edits": []map[string]string{{"oldText": "two", "newText": "three"}}}),
			"  diff:\n    --- " + filepath.Join(dir, "a.txt") + " (now)\n"},
		{"an escape in the new text", args(map[string]any{"path": "a.txt", "content": "one\n\x1b[2J\n"}), "    +\\u001b[2J\n"},
		{"a note", args(map[string]any{"path": "a.txt", "content": "one\ntwo\n"}), "  diff:       the file would not change\n"},
		{"no write", args(map[string]any{"path": "a.txt"}), ""},
	} {
		got := fileDiff(tc.raw, dir)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) || strings.Contains(got, "\x1b") {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
