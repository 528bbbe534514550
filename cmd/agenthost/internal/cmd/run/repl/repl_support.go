package repl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/agenthost/agenthost/approvals"
	"github.com/agenthost/agenthost/approvals/writediff"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/cmdutil"
	"github.com/agenthost/agenthost/cmd/agenthost/internal/terminal"
	"github.com/agenthost/agenthost/config"
	"github.com/agenthost/agenthost/host"
	"github.com/agenthost/agenthost/host/compose"
)

// localAlways shows the answers "always" (compose.AlwaysAnswers keeps
// them) at the approval question, in the REPL's events and for /approvals.
type localAlways struct{ a *compose.AlwaysAnswers }

func newLocalAlways(cfg *config.Config) *localAlways {
	return &localAlways{a: compose.NewAlwaysAnswers(cfg)}
}

// always saves the answer "always" for the request's tool.
func (la *localAlways) always(req *approvals.Request) (string, error) {
	id, err := la.a.Save(req.Server, req.Tool, time.Now())
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("allowed always: rule %s saved in %s (/approvals lists and removes it)", id, la.a.Path()), nil
}

// reused says when an approval event reuses an earlier answer ("" when it
// does not).
func (la *localAlways) reused(e host.Event) string {
	switch la.a.Reused(e.Server, e.Tool, e.Decision, e.Outcome) {
	case compose.ReuseAlways:
		return fmt.Sprintf("allowed by your earlier answer \"always\" (rule %s; /approvals removes it)", cmdutil.Shown(io.Discard, config.AlwaysEntry{Server: e.Server, Tool: e.Tool}.RuleID()))
	case compose.ReuseSession:
		return "allowed by your earlier answer \"for this session\""
	}
	return ""
}

// list describes the saved answers, numbered for /approvals remove N.
func (la *localAlways) list() string {
	if !la.a.Offered() {
		return "no config file, so no local settings file: \"always\" is not offered\n"
	}
	entries := la.a.Entries()
	if len(entries) == 0 {
		return fmt.Sprintf("no answers \"always\" saved (they are kept in %s)\n", la.a.Path())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "answers \"always\" in %s (each an allow rule; deny and ask rules still win):\n", la.a.Path())
	for i, e := range entries {
		fmt.Fprintf(&b, "  %d. %s/%s  rule %s  saved %s\n", i+1, e.Server, e.Tool, e.RuleID(), e.At.Local().Format(time.DateTime))
	}
	b.WriteString("remove one with /approvals remove N; answers \"for this session\" last until /clear or the end of the REPL\n")
	return terminal.TerminalText(b.String())
}

// remove removes saved answer n (1-based) or the one with rule id arg.
func (la *localAlways) remove(arg string) string {
	if !la.a.Offered() {
		return "no local settings file\n"
	}
	id, err := la.a.Remove(arg)
	var none *compose.NoAnswerError
	switch {
	case errors.As(err, &none):
		return terminal.TerminalText(none.Error() + " (/approvals lists them)\n")
	case err != nil:
		return terminal.TerminalText(fmt.Sprintf("could not save %s: %v\n", la.a.Path(), err))
	}
	return terminal.TerminalText(fmt.Sprintf("removed rule %s; this session's policy was loaded at start, so it stops applying when agenthost starts next (and a tool allowed for this session stays so until /clear)\n", id))
}

// approvalDetail is what the REPL adds to an approval question: which call
// it is ([N] of the turn), and for a call that writes a file, a diff of the
// file as it is against what the call would write.
func approvalDetail(ui *replUI, cfg *config.Config) func(*approvals.Request) string {
	return func(req *approvals.Request) string {
		var b strings.Builder
		if l := ui.label(req.CallID); l != "" {
			fmt.Fprintf(&b, "  call:       %s\n", terminal.TerminalText(l))
		}
		cwd := ""
		if s, ok := cfg.MCPServers[req.Server]; ok && s != nil {
			cwd = s.Cwd
		}
		b.WriteString(fileDiff(req.Arguments, cwd))
		return b.String()
	}
}

// fileDiff is the diff lines of an approval question for a call that
// would write a file (writediff decides which calls do and what they
// change): the note when none is shown, else the diff, indented and
// escaped; "" for a call that writes no file.
func fileDiff(raw json.RawMessage, cwd string) string {
	d, ok := writediff.Of(raw, cwd)
	switch {
	case !ok:
		return ""
	case d.Note != "":
		return "  diff:       " + terminal.TerminalText(d.Note) + "\n"
	}
	var b strings.Builder
	b.WriteString("  diff:\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(d.Unified, "\n"), "\n") {
		b.WriteString("    " + terminal.TerminalText(strings.TrimSuffix(line, "\n")) + "\n")
	}
	return b.String()
}

// progressText is a tool_progress event for the spinner line: the
// server's progress (of its total, when it gave one) and its message, one
// line of at most 80 characters (escaped where it is drawn).
func progressText(e host.Event) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	text := ""
	if e.Progress != nil {
		text = num(*e.Progress)
		if e.Total != nil {
			text += "/" + num(*e.Total)
		}
	}
	if e.Text != "" {
		text = strings.TrimSpace(text + " " + e.Text)
	}
	return cmdutil.Truncate(text, 80)
}

// slash runs a slash command.
func (m *replModel) slash(line string) tea.Cmd {
	fields := strings.Fields(line)
	out := ""
	switch fields[0] {
	case "/help":
		out = replHelp
	case "/exit", "/quit":
		return m.quit()
	case "/tools":
		out = m.toolsText()
	case "/servers":
		out = m.serversText()
	case "/approvals":
		if len(fields) == 3 && fields[1] == "remove" {
			out = m.local.remove(fields[2])
		} else {
			out = m.local.list()
		}
	case "/clear":
		sess, err := m.a.f.Session(m.h, m.a.session)
		if err != nil {
			out = terminal.TerminalText(fmt.Sprintf("could not start a new session: %v\n", err))
			break
		}
		m.sess.Close()
		m.sess = sess
		out = "conversation cleared: a new session (answers \"for this session\" are forgotten; answers \"always\" are kept)\n"
	case "/cost":
		out = fmt.Sprintf("%d turns; tokens: %s prompt, %s completion, %s total\n", m.turns,
			terminal.GroupDigits(m.usage.PromptTokens), terminal.GroupDigits(m.usage.CompletionTokens), terminal.GroupDigits(m.usage.TotalTokens))
	default:
		out = terminal.TerminalText(fmt.Sprintf("unknown command %s; /help lists them\n", fields[0]))
	}
	m.addOut(line + "\n" + out)
	return m.flush()
}

const replHelp = `commands:
  /help                  this list
  /tools                 the tools of every server: offered to the model, hidden or excluded, and why
  /servers               each server's state
  /approvals             the answers "always" saved beside the config; /approvals remove N removes one
  /clear                 start a new conversation (a new session)
  /cost                  turns and tokens used so far
  /exit                  leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)
keys:
  Enter sends; Shift-Enter, Alt-Enter, Ctrl-J or a \ at the end of the line adds a line
  Up/Down recall earlier messages (kept across sessions); Ctrl-A/E, Alt-B/F, Ctrl-W/K/U edit
  Ctrl-C clears the line, interrupts a running turn (and denies an open question), twice leaves
  a message typed while a turn runs is queued for after it
`

func (m *replModel) toolsText() string {
	v := m.sess.View(m.ctx)
	var b strings.Builder
	names := make([]string, 0, len(v.Tools))
	for name := range v.Tools {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, server := range names {
		for _, t := range v.Tools[server] {
			fmt.Fprintf(&b, "  %s/%s  %s", server, t.ExposedName, t.Status)
			if t.Reason != "" {
				fmt.Fprintf(&b, ": %s", t.Reason)
			}
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return "no tools (/servers shows each server's state)\n"
	}
	return terminal.TerminalText(b.String())
}

func (m *replModel) serversText() string {
	var b strings.Builder
	for _, s := range m.h.Servers() {
		fmt.Fprintf(&b, "  %s  %s, %d tools", s.Name, s.Status, len(s.Tools))
		if s.Error != "" {
			fmt.Fprintf(&b, ": %s", m.a.f.Redact(s.Error))
		}
		b.WriteString("\n")
	}
	if b.Len() == 0 {
		return "no servers configured\n"
	}
	return terminal.TerminalText(b.String())
}

// history is the REPL's message history, kept in a file across sessions
// (one JSON string a line), at most maxHistory entries.
type history struct {
	path    string
	entries []string
	idx     int
	draft   string
}

const (
	maxHistory      = 1000
	maxHistoryEntry = 64 << 10 // longer messages are not kept
)

// historyPath is $XDG_STATE_HOME/agenthost/history (default
// ~/.local/state/agenthost/history); "" when neither is known.
func historyPath() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "agenthost", "history")
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if path != "" {
		if f, err := os.Open(path); err == nil {
			sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
			sc.Buffer(make([]byte, 0, 64<<10), 2*maxHistoryEntry)
			for sc.Scan() {
				var s string
				if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
					h.entries = append(h.entries, s)
				}
			}
			f.Close()
		}
	}
	if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
	}
	h.idx = len(h.entries)
	return h
}

func (h *history) add(s string) {
	h.reset()
	if len(s) > maxHistoryEntry || (len(h.entries) > 0 && h.entries[len(h.entries)-1] == s) {
		return
	}
	h.entries = append(h.entries, s)
	if len(h.entries) > maxHistory {
		h.entries = h.entries[len(h.entries)-maxHistory:]
	}
	h.idx = len(h.entries)
	h.append(s)
}

// append adds one entry to the file.
func (h *history) append(s string) {
	if h.path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(h.path), 0o700); err != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	data, _ := json.Marshal(s)
	_, _ = f.Write(append(data, '\n'))
	_ = f.Close()
}

// save rewrites the file with the entries kept when it has grown past
// twice the bound.
func (h *history) save() {
	if h.path == "" {
		return
	}
	info, err := os.Stat(h.path)
	if err != nil || info.Size() < 2*maxHistory*256 {
		return
	}
	var b strings.Builder
	for _, s := range h.entries {
		data, _ := json.Marshal(s)
		b.Write(data)
		b.WriteByte('\n')
	}
	tmp := h.path + ".tmp"
	if os.WriteFile(tmp, []byte(b.String()), 0o600) == nil {
		_ = os.Rename(tmp, h.path)
	}
}

func (h *history) prev(current string) (string, bool) {
	if h.idx == 0 {
		return "", false
	}
	if h.idx == len(h.entries) {
		h.draft = current
	}
	h.idx--
	return h.entries[h.idx], true
}

func (h *history) next() (string, bool) {
	if h.idx >= len(h.entries) {
		return "", false
	}
	h.idx++
	if h.idx == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.idx], true
}

func (h *history) reset() { h.idx, h.draft = len(h.entries), "" }
