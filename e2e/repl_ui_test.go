//go:build unix

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/agenthost/host/modeltest"
)

// replNotes is a server with one tool that writes (asked by noMatch, so
// "always" is offered) and the config that uses it.
type replNotes struct {
	cfg, record, state string
}

func newReplNotes(t *testing.T, model *rtModel) replNotes {
	t.Helper()
	dir := t.TempDir()
	n := replNotes{record: filepath.Join(dir, "record.jsonl"), state: t.TempDir()}
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "write_note", "inputSchema": rtQueryInput, "annotations": rtRisk("write", "medium", "item", "manual", "single"),
			"x-test": obj{"text": "note written"}},
	})
	entry := stdioServer(tools, n.record)
	entry["trustAnnotations"] = true
	n.cfg = writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"notes": entry}, "approvals": obj{"noMatch": "ask"}})
	return n
}

func (n replNotes) executed(t *testing.T) int {
	t.Helper()
	if _, err := os.Stat(n.record); err != nil {
		return 0
	}
	return len(withMethod(readRecord(t, n.record), "tools/call"))
}

func (n replNotes) start(t *testing.T) *rtTerminal {
	t.Helper()
	term := rtStartOnTerminalEnv(t, []string{"USER=tester", "XDG_STATE_HOME=" + n.state}, "--config", n.cfg, "run")
	term.waitOutput(t, 20*time.Second, "interactive session")
	return term
}

func (term *rtTerminal) typed(t *testing.T, s string) {
	t.Helper()
	if _, err := term.pty.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
}

func (term *rtTerminal) exitsWith(t *testing.T, want int) {
	t.Helper()
	if code := term.wait(t, 20*time.Second); code != want {
		t.Fatalf("exit code %d, want %d\n%s", code, want, term.output())
	}
}

// TestREPLTypeAheadIsNotAnAnswer: keys typed while the model works are not
// the answer to the question drawn later: the draft is discarded (and the
// REPL says so), a line sent meanwhile is queued as the next message, the
// call does not run until an answer typed after the question, and the
// question names its call.
func TestREPLTypeAheadIsNotAnAnswer(t *testing.T) {
	t.Parallel()
	model := rtStartModel(t, modeltest.Script{
		{ToolCalls: []modeltest.ToolCall{rtCall("c1", "notes__write_note", obj{"query": "a"})}, Delay: 2 * time.Second},
		rtText("Written."),
		{Text: "Got your y.", Expect: &modeltest.Expect{LastUserContains: "y"}},
	})
	n := newReplNotes(t, model)
	term := n.start(t)
	term.typed(t, "write a note\r")
	term.waitOutput(t, 10*time.Second, "thinking")
	term.typed(t, "y\r")
	term.waitOutput(t, 10*time.Second, "queued for after this turn: y")
	term.typed(t, "yy")
	term.waitOutput(t, 20*time.Second, "discarded 2 typed-ahead characters")
	term.waitOutput(t, 5*time.Second, "call:       [1] notes/write_note")
	time.Sleep(time.Second)
	if got := n.executed(t); got != 0 {
		t.Fatalf("the call ran %d times on type-ahead\n%s", got, term.output())
	}
	term.typed(t, "y\r")
	term.waitOutput(t, 20*time.Second, "Written.")
	term.waitOutput(t, 20*time.Second, "Got your y.")
	if got := n.executed(t); got != 1 {
		t.Errorf("the call ran %d times, want once", got)
	}
	term.typed(t, "\x04")
	term.exitsWith(t, 0)
	model.wantNoFailures(t)
}

// TestREPLApprovalAnswers: once, for this session (reused and said so),
// deny with a reason (the model is told it), and always: saved in the
// local settings file beside the config, listed by /approvals, reused by
// the next REPL (and said so), removed by /approvals remove.
func TestREPLApprovalAnswers(t *testing.T) {
	t.Parallel()
	call := func(id string) modeltest.Step {
		return rtCalls(rtCall(id, "notes__write_note", obj{"query": id}))
	}
	model := rtStartModel(t, modeltest.Script{
		call("c1"), rtText("one."),
		call("c2"), rtText("two."),
		call("c3"), rtText("three."),
		call("c4"), {Text: "four.", Expect: &modeltest.Expect{LastToolResultContains: "use the drafts folder"}},
		call("c5"), rtText("five."),
		// The next REPL.
		call("c6"), rtText("six."),
	})
	n := newReplNotes(t, model)
	local := filepath.Join(filepath.Dir(n.cfg), "agenthost.local.yaml")
	term := n.start(t)
	answer := func(prompt, reply, done string, questions int) {
		t.Helper()
		term.typed(t, prompt+"\r")
		term.waitCount(t, 20*time.Second, "approval needed", questions)
		time.Sleep(300 * time.Millisecond)
		term.typed(t, reply)
		term.waitOutput(t, 20*time.Second, done)
	}
	answer("first", "y\r", "one.", 1)
	answer("second", "s\r", "two.", 2)
	term.typed(t, "third\r")
	term.waitOutput(t, 20*time.Second, `allowed by your earlier answer "for this session"`)
	term.waitOutput(t, 20*time.Second, "three.")
	// A new conversation forgets the session's answer.
	term.typed(t, "/clear\r")
	term.waitOutput(t, 10*time.Second, "conversation cleared")
	answer("fourth", "r\r", "reason for the model", 3)
	time.Sleep(300 * time.Millisecond) // typed after the question appeared
	term.typed(t, "use the drafts folder\r")
	term.waitOutput(t, 20*time.Second, "four.")
	answer("fifth", "a\r", "five.", 4)
	term.waitOutput(t, 5*time.Second, "allowed always: rule local/always/notes/write_note saved in")
	term.typed(t, "/approvals\r")
	term.waitOutput(t, 10*time.Second, "1. notes/write_note  rule local/always/notes/write_note")
	term.typed(t, "/exit\r")
	term.exitsWith(t, 0)
	data, err := os.ReadFile(local)
	if err != nil || !strings.Contains(string(data), "tool: write_note") {
		t.Fatalf("local settings %q %v", data, err)
	}
	if got := n.executed(t); got != 4 { // c1, c2, c3, c5
		t.Errorf("%d calls ran, want 4", got)
	}

	term = n.start(t)
	term.typed(t, "sixth\r")
	term.waitOutput(t, 20*time.Second, `allowed by your earlier answer "always"`)
	term.waitOutput(t, 20*time.Second, "six.")
	if strings.Contains(term.output(), "approval needed") {
		t.Errorf("the saved answer was asked again\n%s", term.output())
	}
	term.typed(t, "/approvals remove 1\r")
	term.waitOutput(t, 10*time.Second, "removed rule local/always/notes/write_note")
	term.typed(t, "/exit\r")
	term.exitsWith(t, 0)
	if data, _ := os.ReadFile(local); strings.Contains(string(data), "write_note") {
		t.Errorf("the removed answer is still saved: %s", data)
	}
	model.wantNoFailures(t)
	byCall := rtAuditByCall(t, rtReadAudit(t, rtAuditPath(n.cfg)))
	a := rtWantAudit(t, byCall, "c4", "write_note", "ask", "rejected", "not_executed")
	if len(a.Approvers) != 1 || a.Approvers[0].Decision != "deny" {
		t.Errorf("c4's approvers %+v", a.Approvers)
	}
	rtWantAudit(t, byCall, "c6", "write_note", "allow", "auto_allowed", "ok")
}

// TestREPLEditingHistoryPasteAndCtrlC: arrow keys edit the line (not sent
// to the model as escapes), Up recalls earlier messages in this REPL and
// the next, a 1 MiB bracketed paste is sent whole, Ctrl-C clears a line,
// interrupts a running turn, and twice at an empty prompt leaves.
func TestREPLEditingHistoryPasteAndCtrlC(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	model := rtStartModel(t, modeltest.Script{
		rtText("one."),
		rtText("two."),
		rtText("three."),
		{Text: "never shown", Delay: 15 * time.Second},
		rtText("five."),
		// The next REPL.
		rtText("six."),
	})
	n := newReplNotes(t, model)
	term := n.start(t)
	term.typed(t, "helo\x1b[Dl\x1b[H>\r") // left, insert, Home, insert
	term.waitOutput(t, 20*time.Second, "one.")
	term.typed(t, "\x1b[A\r") // Up: the last message again
	term.waitOutput(t, 20*time.Second, "two.")
	term.typed(t, "\x1b[200~"+big+"\x1b[201~")
	term.waitOutput(t, 20*time.Second, "[pasted text #1: 1,048,576 bytes, 1 lines]")
	term.typed(t, "\r")
	term.waitOutput(t, 30*time.Second, "three.")
	// Ctrl-C clears the line; the next line is sent alone.
	term.typed(t, "discard me\x03")
	time.Sleep(200 * time.Millisecond)
	term.typed(t, "slow one\r")
	term.waitOutput(t, 20*time.Second, "> slow one")
	time.Sleep(time.Second) // the model request is on its way
	interrupted := time.Now()
	term.typed(t, "\x03") // interrupts the running turn
	term.waitOutput(t, 10*time.Second, "turn ended: interrupted")
	if d := time.Since(interrupted); d > 8*time.Second {
		t.Errorf("the turn ended %s after Ctrl-C, not before the model's answer", d)
	}
	term.typed(t, "after\r")
	term.waitOutput(t, 20*time.Second, "five.")
	term.typed(t, "\x03")
	term.waitOutput(t, 10*time.Second, "press Ctrl-C again to leave")
	term.typed(t, "\x03")
	term.exitsWith(t, 0)

	term = n.start(t)
	term.typed(t, "\x1b[A\x1b[A\x1b[A\x1b[A\r") // the 4th from last: the edited first line
	term.waitOutput(t, 20*time.Second, "six.")
	term.typed(t, "\x04")
	term.exitsWith(t, 0)

	model.wantNoFailures(t)
	rec := model.recording(t)
	if len(rec) != 6 {
		t.Fatalf("%d model requests, want 6", len(rec))
	}
	lastUser := func(i int) string {
		msgs := rec.MessagesOf(i)
		for j := len(msgs) - 1; j >= 0; j-- {
			if msgs[j].Role == "user" {
				return msgs[j].Text()
			}
		}
		return ""
	}
	for i, want := range []string{">hello", ">hello", big, "slow one", "after", ">hello"} {
		if got := lastUser(i); got != want {
			t.Errorf("request %d's message is %q (%d bytes), want %q", i+1, truncateForError(got), len(got), truncateForError(want))
		}
	}
	if slices.ContainsFunc([]string{lastUser(0), lastUser(4)}, func(s string) bool { return strings.Contains(s, "\x1b") || strings.Contains(s, "discard") }) {
		t.Error("an escape or a cleared line reached the model")
	}
}

func truncateForError(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// TestREPLWarnsOnceThatNothingIsRecorded: with audit.path empty, the
// warning that decisions are not recorded comes once, before the REPL
// draws its prompt, and not in the middle of a turn's output when the
// first call is decided.
func TestREPLWarnsOnceThatNothingIsRecorded(t *testing.T) {
	t.Parallel()
	const warning = "audit.path is empty"
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "notes__read_note", obj{"query": "a"})),
		rtText("Read it."),
	})
	dir := t.TempDir()
	tools := writeJSON(t, dir, "tools.json", []obj{
		{"name": "read_note", "inputSchema": rtQueryInput, "annotations": rtRisk("read", "low", "item", "auto", "none"), "x-test": obj{"text": "a note"}},
	})
	entry := stdioServer(tools, "")
	entry["trustAnnotations"] = true
	cfg := writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"notes": entry}, "audit": obj{}})
	term := rtStartOnTerminalEnv(t, []string{"USER=tester", "XDG_STATE_HOME=" + t.TempDir()}, "--config", cfg, "run")
	term.waitOutput(t, 20*time.Second, warning)
	term.waitOutput(t, 20*time.Second, "> ")
	term.typed(t, "read a note\r")
	term.waitOutput(t, 20*time.Second, "Read it.")
	if got := strings.Count(term.output(), warning); got != 1 {
		t.Errorf("the warning was shown %d times, want once\n%s", got, term.output())
	}
	if w, p := strings.Index(term.output(), warning), strings.Index(term.output(), "> "); w > p {
		t.Errorf("the warning came after the prompt was drawn\n%s", term.output())
	}
	term.typed(t, "\x04")
	term.exitsWith(t, 0)
	model.wantNoFailures(t)
}

// TestREPLPlaceholderOnlyWhereItCanBeDrawn: the empty editor's hint is
// shown on a terminal that can draw it faint, and not under TERM=dumb,
// where it read as typed text.
func TestREPLPlaceholderOnlyWhereItCanBeDrawn(t *testing.T) {
	t.Parallel()
	const placeholder = "message, /help for commands"
	for _, tc := range []struct {
		term string
		want bool
	}{{"dumb", false}, {"xterm-256color", true}} {
		t.Run(tc.term, func(t *testing.T) {
			t.Parallel()
			model := rtStartModel(t, modeltest.Script{})
			n := newReplNotes(t, model)
			term := rtStartOnTerminalEnv(t, []string{"TERM=" + tc.term, "USER=tester", "XDG_STATE_HOME=" + n.state}, "--config", n.cfg, "run")
			term.waitOutput(t, 20*time.Second, "> ")
			time.Sleep(500 * time.Millisecond) // the editor is drawn
			if got := strings.Contains(term.output(), placeholder); got != tc.want {
				t.Errorf("TERM=%s: placeholder shown %v, want %v\n%s", tc.term, got, tc.want, term.output())
			}
			term.typed(t, "\x04")
			term.exitsWith(t, 0)
		})
	}
}

// progressTools is a server with one slow tool that reports progress
// (notifications/progress, as the REPL's spinner and the run events show it).
func progressTools(t *testing.T, model *rtModel) string {
	t.Helper()
	tools := writeJSON(t, t.TempDir(), "tools.json", []obj{
		{"name": "copy_files", "inputSchema": rtQueryInput, "annotations": rtRisk("read", "low", "item", "auto", "none"),
			"x-test": obj{"text": "copied", "sleep": "3s", "progress": []obj{
				{"progress": 1, "total": 3, "message": "copying a.txt"},
				{"progress": 2, "total": 3, "message": "copying b.txt"},
			}}},
	})
	entry := stdioServer(tools, "")
	entry["trustAnnotations"] = true
	return writeConfig(t, obj{"llm": model.llm(), "mcpServers": obj{"files": entry}})
}

// TestREPLShowsToolProgress: the spinner of a running call shows the
// progress its server reports.
func TestREPLShowsToolProgress(t *testing.T) {
	t.Parallel()
	model := rtStartModel(t, modeltest.Script{
		rtCalls(rtCall("c1", "files__copy_files", obj{"query": "all"})),
		rtText("Copied."),
	})
	cfg := progressTools(t, model)
	term := rtStartOnTerminalEnv(t, []string{"USER=tester", "XDG_STATE_HOME=" + t.TempDir()}, "--config", cfg, "run")
	term.waitOutput(t, 20*time.Second, "> ")
	term.typed(t, "copy the files\r")
	term.waitOutput(t, 20*time.Second, "running [1] files/copy_files: 1/3 copying a.txt")
	term.waitOutput(t, 20*time.Second, "running [1] files/copy_files: 2/3 copying b.txt")
	term.waitOutput(t, 20*time.Second, "Copied.")
	term.typed(t, "\x04")
	term.exitsWith(t, 0)
	model.wantNoFailures(t)
}

// TestRunToolProgressEvents: agenthost-stream-json has a tool_progress
// event per progress report, between the call's tool_call and tool_result,
// with the server's progress, total and message; stream-json has Claude
// Code's tool_progress lines (the tool and its elapsed time), type-checked.
func TestRunToolProgressEvents(t *testing.T) {
	t.Parallel()
	script := modeltest.Script{
		rtCalls(rtCall("c1", "files__copy_files", obj{"query": "all"})),
		rtText("Copied."),
	}
	t.Run("agenthost-stream-json", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		r := run(t, nil, "--config", progressTools(t, model), "run", "copy", "--output-format", "agenthost-stream-json")
		wantCode(t, r, 0)
		var types []string
		var progress []string
		for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var e struct {
				Type       string   `json:"type"`
				CallID     string   `json:"callId"`
				Tool       string   `json:"tool"`
				Progress   *float64 `json:"progress"`
				Total      *float64 `json:"total"`
				Text       string   `json:"text"`
				DurationMs *int64   `json:"durationMs"`
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("not a JSON line: %q", line)
			}
			types = append(types, e.Type)
			if e.Type == "tool_progress" {
				if e.CallID != "c1" || e.Tool != "copy_files" || e.Progress == nil || e.Total == nil || e.DurationMs == nil {
					t.Errorf("tool_progress %s", line)
					continue
				}
				progress = append(progress, fmt.Sprintf("%g/%g %s", *e.Progress, *e.Total, e.Text))
			}
		}
		if want := []string{"1/3 copying a.txt", "2/3 copying b.txt"}; !slices.Equal(progress, want) {
			t.Errorf("progress %q, want %q\n%s", progress, want, r.stdout)
		}
		joined := strings.Join(types, " ")
		if !strings.Contains(joined, "tool_call approval tool_progress tool_progress tool_result") {
			t.Errorf("event order %s", joined)
		}
		model.wantNoFailures(t)
	})
	t.Run("stream-json", func(t *testing.T) {
		t.Parallel()
		model := rtStartModel(t, script)
		r := run(t, nil, "--config", progressTools(t, model), "run", "copy", "--output-format", "stream-json")
		wantCode(t, r, 0)
		lines := ccLines(t, r) // type-checked against the Agent SDK
		if got := ccOfType(lines, "tool_progress"); len(got) != 2 || !strings.Contains(got[0].raw, `"tool_use_id":"c1","tool_name":"mcp__files__copy_files"`) {
			t.Errorf("tool_progress lines %v\n%s", got, r.stdout)
		}
		model.wantNoFailures(t)
	})
}
